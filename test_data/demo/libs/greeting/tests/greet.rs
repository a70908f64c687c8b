//! Integration tests of the public `greeting` API.

#[test]
fn greets_several_people() {
    assert_eq!(greeting::greet(&["ann", "bo"]), "Hello, Ann and Bo!");
}
