// <kj/async-io.h>, with GCC 12's -Wmaybe-uninitialized off for the templates it defines: GCC flags
// the Maybe<T> inside kj::_::ExceptionOr<T> (a union) as maybe uninitialized whenever a
// kj::Promise<T> carries a T holding a std::string, a false positive. The pragma covers KJ's
// definitions only, so the warning stays on for our own code; a file that makes such promises
// includes this before anything else that brings KJ.
#pragma once

#if defined(__GNUC__) && !defined(__clang__)  // clang has no such warning (and no false positive)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <kj/async-io.h>
#pragma GCC diagnostic pop
#else
#include <kj/async-io.h>
#endif
