pub fn a() {}
