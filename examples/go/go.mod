module fencekeeper-example

go 1.19

require fencekeeper v0.0.0

// The package from this source tree; an installed tree has it under
// <prefix>/share/fencekeeper/go (tests/install/install_test.sh builds this example against it).
replace fencekeeper => ../../client_lib/go
