//! An integration test with a test named as one in `one.rs`.

#[test]
fn works() {
    assert_eq!(cases::add(3, 3), 6);
}
