#include "goref/base/result.h"

namespace goref {

std::string_view errc_name(Errc c) {
  switch (c) {
    case Errc::kNoSuchProcess:
      return "no such process";
    case Errc::kPermission:
      return "permission denied";
    case Errc::kNotFound:
      return "not found";
    case Errc::kNotGo:
      return "not a Go program";
    case Errc::kNoDwarf:
      return "no DWARF";
    case Errc::kUnsupported:
      return "unsupported";
    case Errc::kBadFormat:
      return "bad format";
    case Errc::kUnmapped:
      return "unmapped";
    case Errc::kShortRead:
      return "short read";
    case Errc::kIo:
      return "I/O error";
    case Errc::kUsage:
      return "usage";
    case Errc::kInterrupted:
      return "interrupted";
    case Errc::kInternal:
      return "internal error";
  }
  return "unknown";
}

}  // namespace goref
