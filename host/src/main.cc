// The banlieue binary. Dispatch only: every role lives in host/roles/.
#include "host/app/cli.h"

int main(int argc, char** argv) {
  return banlieue::app::run(argc, argv);
}
