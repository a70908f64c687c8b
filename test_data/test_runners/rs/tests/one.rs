//! An integration test with a test named as one in `two.rs`.

#[test]
fn works() {
    assert_eq!(cases::add(2, 2), 4);
}
