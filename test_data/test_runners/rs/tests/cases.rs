//! An integration test named like the library crate (`cases`): its executable and the
//! library's unit-test executable have the same name, and both must run.

#[test]
fn named_like_the_library() {
    assert_eq!(cases::add(1, 1), 2);
}
