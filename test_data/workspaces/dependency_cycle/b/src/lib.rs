pub fn b() {}
