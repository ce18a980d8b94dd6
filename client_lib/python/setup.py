"""Build settings pyproject.toml cannot say: setuptools works in a temporary directory, never in
the source tree (no build/ or *.egg-info left behind), and a wheel that carries libfencekeeper.so
is tagged for this platform (py3-none-<platform>: the library is native, the Python pure)."""
import atexit
import shutil
import tempfile

from setuptools import setup

try:
    from wheel.bdist_wheel import bdist_wheel
except ImportError:  # no wheel package: sdist and in-place installs still work
    bdist_wheel = None

scratch = tempfile.mkdtemp(prefix="fencekeeper-build-")
atexit.register(shutil.rmtree, scratch, ignore_errors=True)
commands = {}

if bdist_wheel is not None:
    class PlatformWheel(bdist_wheel):
        def finalize_options(self):
            super().finalize_options()
            self.root_is_pure = False  # the library inside is native

        def get_tag(self):
            _, _, platform = super().get_tag()
            return "py3", "none", platform

    commands["bdist_wheel"] = PlatformWheel

setup(cmdclass=commands,
      options={"build": {"build_base": scratch + "/build"},
               "egg_info": {"egg_base": scratch},
               "bdist_wheel": {"bdist_dir": scratch + "/wheel"}})
