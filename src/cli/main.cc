#include <cstdio>

int main() {
  std::puts("goref");
  return 0;
}
