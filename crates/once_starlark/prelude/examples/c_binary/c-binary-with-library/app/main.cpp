// Greets the first argument using the greeting library.
#include <iostream>
#include <string>

#include "greeting/greeting.h"

int main(int argc, char** argv) {
    std::string name = argc > 1 ? argv[1] : "stranger";
    std::cout << greeting::greet(name) << '\n';
    return 0;
}
