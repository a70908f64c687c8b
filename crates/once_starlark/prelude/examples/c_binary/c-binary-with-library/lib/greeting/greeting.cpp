#include "greeting/greeting.h"

namespace greeting {

std::string greet(const std::string& name) {
    return "hello, " + name;
}

}  // namespace greeting
