// A provider process in miniature, for the restart test: loads the qemu plugin (the SDK-only
// build named by BANLIEUE_QEMU_PLUGIN), makes an instance from a config file and drives one
// slot on one object until it is no longer IN_PROGRESS, then exits: a fresh process that knows
// nothing but what the backend shows.
//
//   qemu_plugin_call <config.json> <reconcile|finalize> <object.json> <uid>
//
// Prints "<CODE> <reply body>" and exits 0 when the final answer is OK, 1 otherwise.
#include <fstream>
#include <iostream>
#include <iterator>

#include "tests/thirdparty/plugin_driver.h"

namespace {

std::string slurp(const char* path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: qemu_plugin_call <config.json> <reconcile|finalize> <object.json> <uid>\n";
    return 2;
  }
  try {
    banlieue::qemu::testing::Driver driver;
    auto created = driver.create(slurp(argv[1]));
    if (!created.ok()) {
      std::cout << created.codeName() << " " << created.reason << ": " << created.message << "\n";
      return 1;
    }
    auto outcome = driver.drive(argv[2], slurp(argv[3]), argv[4]);
    std::cout << outcome.codeName() << " " << outcome.body << "\n";
    return outcome.ok() ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "qemu_plugin_call: " << e.what() << "\n";
    return 1;
  }
}
