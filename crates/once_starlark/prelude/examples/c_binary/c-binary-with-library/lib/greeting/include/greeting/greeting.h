// Builds greetings.
#ifndef GREETING_GREETING_H
#define GREETING_GREETING_H

#include <string>

namespace greeting {

// Returns "hello, <name>".
std::string greet(const std::string& name);

}  // namespace greeting

#endif
