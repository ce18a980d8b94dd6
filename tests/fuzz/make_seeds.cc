// Writes the seed corpus of the fuzz targets (tests/fuzz/corpus/<target>/): call scripts for
// rpc_calls, the bytes a real Cap'n Proto client writes while running each script for rpc_bytes
// (plus hand-made malformed frames), and names for lock_name. With --check it compares instead of
// writing (the Fuzz.SeedsAreCurrent test). Files the generator does not write (regression seeds
// of crashes found, `regress-*`) are left alone.
//   fk_fuzz_seeds [--check] tests/fuzz/corpus
#include <capnp/message.h>
#include <capnp/rpc.capnp.h>
#include <capnp/serialize.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

#include "ipc/fencekeeper.capnp.h"
#include "tests/fuzz/call_script.h"

namespace fs = std::filesystem;
using fencekeeper::fuzz::Op;
using fencekeeper::fuzz::ScriptWriter;

namespace {

using Corpus = std::map<std::string, std::string>;  // "<target>/<file>" -> bytes

std::map<std::string, ScriptWriter> callScripts() {
  std::map<std::string, ScriptWriter> s;
  s["status_holder"].plain(Op::kStatus).named(Op::kHolder, "jobs");
  s["lease_lifecycle"]
      .acquire("jobs/nightly", 10'000, 0, "worker", true)
      .leaseOp(Op::kRenew, 0, 20'000)
      .leaseOp(Op::kToken, 0)
      .leaseOp(Op::kRelease, 0)
      .leaseOp(Op::kToken, 0)
      .leaseOp(Op::kRenew, 0, 0);
  s["contention"]
      .acquire("a", 10'000, 60'000, "first", true)
      .acquire("a", 10'000, 60'000, "second", true)
      .named(Op::kHolder, "a")
      .leaseOp(Op::kRelease, 0)
      .advance(1'000)
      .leaseOp(Op::kToken, 1)
      .leaseOp(Op::kDropLease, 1)
      .plain(Op::kStatus);
  s["ttl_expiry"]
      .acquire("jobs", 1'000, 0, "short", true)
      .advance(2'000)
      .leaseOp(Op::kToken, 0)
      .leaseOp(Op::kRenew, 0, 1'000);
  s["session_expiry"]
      .acquire("jobs", 30'000, 0, "", true)
      .plain(Op::kExpireSession)
      .advance(5'000)
      .leaseOp(Op::kToken, 0)
      .acquire("jobs", 30'000, 10'000, "", false)
      .advance(5'000);
  s["other_clients"]
      .acquire("x.y-z_1", 30'000, 0, "", true)
      .named(Op::kAddContender, "x.y-z_1")
      .named(Op::kRemoveHolderNode, "x.y-z_1")
      .acquire("x.y-z_1", 30'000, 1'000, "", false)
      .named(Op::kHolder, "x.y-z_1")
      .advance(2'000);
  s["planted_node"]
      .named(Op::kPlantNode, "jobs")
      .acquire("jobs", 30'000, 5'000, "", false)
      .named(Op::kHolder, "jobs")
      .advance(6'000)
      .plain(Op::kStatus);
  s["bad_arguments"]
      .acquire("a/../b", 0, 0, "", false)
      .acquire(std::string("jobs\0-tenant-b", 14), 0, 0, "", false)
      .acquire("", 0, 0, "", false)
      .acquire("a", 1, 0, "", false)
      .acquire("a", 0xffffffff, 0xffffffff, std::string(255, 'l'), false)
      .named(Op::kHolder, "a//b")
      .named(Op::kHolder, std::string("a\0b", 3));
  // Issue 9: the sidecar cut a name short at a NUL and granted "jobs".
  s["nul_in_name"]
      .acquire(std::string("jobs\0-tenant-b", 14), 30'000, 0, "", false)
      .named(Op::kHolder, std::string("jobs\0-tenant-b", 14))
      .leaseOp(Op::kToken, 0);
  s["cancel_waiter"]
      .acquire("a/b", 30'000, 0, "", false)
      .acquire("a/b", 30'000, 60'000, "", false)
      .cancel(1)
      .advance(60'000)
      .plain(Op::kStatus);
  // Shared locks and semaphores: readers together, a writer behind them, permits of two Ns,
  // unknown modes and permits out of bounds, with the ZooKeeper events of the other scripts.
  s["lock_modes"]
      .acquireMode("jobs", 30'000, 0, 1, 0)
      .acquireMode("jobs", 30'000, 0, 1, 0)
      .acquireMode("jobs", 30'000, 60'000, 0, 0)
      .acquireMode("jobs", 30'000, 60'000, 1, 0)
      .leaseOp(Op::kRelease, 0)
      .leaseOp(Op::kRelease, 1)
      .named(Op::kHolder, "jobs")
      .acquireMode("a", 30'000, 0, 2, 2)
      .acquireMode("a", 30'000, 0, 2, 2)
      .acquireMode("a", 30'000, 60'000, 2, 2)
      .acquireMode("a", 30'000, 0, 2, 3)
      .acquireMode("a", 30'000, 0, 0, 0)
      .named(Op::kRemoveHolderNode, "a")
      .acquireMode("a", 30'000, 0, 2, 0)
      .acquireMode("a", 30'000, 0, 2, 100'000)
      .acquireMode("a", 30'000, 0, 9, 1)
      .plain(Op::kStatus)
      .plain(Op::kExpireSession)
      .advance(5'000);
  s["drop_and_retake"]
      .acquire("a/b/c", 30'000, 0, "", false)
      .leaseOp(Op::kDropLease, 0)
      .acquire("a/b/c", 30'000, 0, "", false)
      .leaseOp(Op::kToken, 0);
  // Issue 11 left watchHolder out of the scripts: a watch across grants, a loss, a session
  // expiry and a drop.
  s["holder_watch"]
      .watchHolder("jobs")
      .acquire("jobs", 30'000, 0, "", true)
      .watchHolder("jobs")
      .acquire("jobs", 30'000, 60'000, "", false)
      .leaseOp(Op::kRelease, 0)
      .advance(1'000)
      .named(Op::kRemoveHolderNode, "jobs")
      .dropHolderWatch(0)
      .plain(Op::kExpireSession)
      .advance(5'000)
      .watchHolder("a/../b");
  return s;
}

std::string flat(capnp::MessageBuilder& message) {
  auto words = capnp::messageToFlatArray(message);
  auto bytes = words.asBytes();
  return std::string(bytes.asChars().begin(), bytes.size());
}

// A call on the bootstrap capability (question 0), as raw RPC messages.
capnp::rpc::Call::Builder bootstrapCall(capnp::MallocMessageBuilder& message, uint64_t interface,
                                        uint16_t method) {
  auto call = message.initRoot<capnp::rpc::Message>().initCall();
  call.setQuestionId(1);
  call.initTarget().initPromisedAnswer().setQuestionId(0);
  call.setInterfaceId(interface);
  call.setMethodId(method);
  return call;
}

std::string bootstrap() {
  capnp::MallocMessageBuilder message;
  message.initRoot<capnp::rpc::Message>().initBootstrap().setQuestionId(0);
  return flat(message);
}

void handMadeFrames(Corpus& corpus) {
  const uint64_t sidecarId = capnp::typeId<fencekeeper::ipc::Sidecar>();
  {
    capnp::MallocMessageBuilder message;
    bootstrapCall(message, 0x1234567812345678ull, 0).initParams();
    corpus["rpc_bytes/unknown_interface"] = bootstrap() + flat(message);
  }
  {
    capnp::MallocMessageBuilder message;
    bootstrapCall(message, sidecarId, 77).initParams();
    corpus["rpc_bytes/unknown_method"] = bootstrap() + flat(message);
  }
  {
    // Issue 9: a call whose cap table holds a million empty entries, in a message of 100 bytes.
    capnp::MallocMessageBuilder message;
    auto params = bootstrapCall(message, sidecarId, 2).initParams();
    capnp::AnyStruct::Builder(kj::mv(params))
        .getPointerSection()[1]
        .initAsListOfAnyStruct(0, 0, 1'000'000);
    corpus["rpc_bytes/cap_table_bomb"] = bootstrap() + flat(message);
  }
  {
    // A valid acquire whose parameters are the wrong struct shape: a list where a struct is.
    capnp::MallocMessageBuilder message;
    auto params = bootstrapCall(message, sidecarId, 0).initParams();
    params.initContent().initAsAnyList(capnp::ElementSize::BYTE, 64);
    corpus["rpc_bytes/params_not_a_struct"] = bootstrap() + flat(message);
  }
  corpus["rpc_bytes/segment_count_huge"] = std::string("\xff\xff\xff\x7f\x00\x00\x00\x00", 8);
  corpus["rpc_bytes/segment_size_huge"] = std::string("\x00\x00\x00\x00\xff\xff\xff\x7f", 8);
  corpus["rpc_bytes/empty_message"] = std::string(8, '\0');
  corpus["rpc_bytes/truncated_bootstrap"] = bootstrap().substr(0, 20);
}

void lockNames(Corpus& corpus) {
  const std::map<std::string, std::string> names = {
      {"valid_simple", "reconcile"},
      {"valid_nested", "team-a/jobs/nightly.v2_x"},
      {"valid_longest", std::string(200, 'a')},
      {"too_long", std::string(201, 'a')},
      {"dot_dot", "a/../b"},
      {"empty_segment", "a//b"},
      {"nul_inside", std::string("jobs\0-tenant-b", 14)},
      {"queue_like_segment", "a/x__lock__0000000001"},
      {"queue_node", "fk0123-1__lock__0000000007"},
      {"queue_node_negative", "abc__lock__-0000000003"},
      {"read_lock_node", "abc__rlock__0000000003"},
      {"semaphore_node", "fk0123-1__sem3__0000000004"},
      {"semaphore_segment", "a__sem"},  // found by the fuzzer: a name the rule refuses
      {"non_ascii", "\xc3\xa9"},
  };
  for (const auto& [file, name] : names) corpus["lock_name/" + file] = name;
}

Corpus generate() {
  Corpus corpus;
  for (auto& [file, script] : callScripts()) {
    const std::string& bytes = script.bytes();
    corpus["rpc_calls/" + file] = bytes;
    std::string wire;
    fencekeeper::fuzz::runCallScript(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(),
                                     &wire);
    corpus["rpc_bytes/" + file] = wire;
  }
  handMadeFrames(corpus);
  lockNames(corpus);
  return corpus;
}

std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

int main(int argc, char** argv) {
  bool check = argc == 3 && std::string(argv[1]) == "--check";
  if (argc != 2 && !check) {
    std::fprintf(stderr, "usage: %s [--check] CORPUS_DIR\n", argv[0]);
    return 2;
  }
  fs::path dir = argv[argc - 1];
  int stale = 0;
  for (const auto& [file, bytes] : generate()) {
    fs::path path = dir / file;
    if (check) {
      if (!fs::exists(path) || readFile(path) != bytes) {
        std::fprintf(stderr, "stale seed: %s (run fk_fuzz_seeds %s)\n", path.c_str(), dir.c_str());
        ++stale;
      }
      continue;
    }
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << bytes;
  }
  return stale == 0 ? 0 : 1;
}
