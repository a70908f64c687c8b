//! Each runner's real native output (captured from pytest, with and without subtests,
//! libtest, `go test -json`, Node's TAP reporter, the `unittest_test` runner and a
//! hand-written TAP stream) assembled into the exact `once.test_results.v1` record
//! expected of it (`tests/fixtures/*.expected.json`).

use expect_test::{ExpectFile, expect_file};
use once_test_results::{Artifacts, NativeFormat, Outcome, Runner, assemble, pytest_subtests};

/// The record of `fixture` in `format`; pytest's JUnit XML is read with the subtests
/// report beside it (`NAME.subtests.jsonl`) when there is one, as the adapter reads it.
fn check(format: NativeFormat, fixture: &str, exit_code: Option<i32>, expected: ExpectFile) {
    let path = format!("{}/tests/fixtures/{fixture}", env!("CARGO_MANIFEST_DIR"));
    let native = std::fs::read_to_string(&path).unwrap();
    let subtests = std::fs::read_to_string(path.replace(".xml", ".subtests.jsonl")).ok();
    let parsed = match (format, subtests) {
        (NativeFormat::PytestJunit, Some(report)) => pytest_subtests::parse(&native, &report),
        _ => format.parse(&native),
    };
    let outcome = Outcome {
        exit_code,
        timed_out: false,
        log: "pkg/.once/out/pkg/Test/test/log.txt".to_owned(),
        cwd: "pkg".to_owned(),
        allow_no_cases: false,
    };
    let artifacts = Artifacts {
        logs: vec![outcome.log.clone()],
        native_results: vec![format!("pkg/.once/out/pkg/Test/test/{fixture}")],
    };
    let record = assemble(
        "pkg/Test",
        Runner::named(format.name()),
        parsed,
        &outcome,
        artifacts,
        "/work/ws",
    );
    let json = serde_json::to_string_pretty(&record).unwrap();
    expected.assert_eq(&format!("{json}\n"));
}

#[test]
fn pytest_junit_xml() {
    check(
        NativeFormat::PytestJunit,
        "pytest.xml",
        Some(1),
        expect_file!["fixtures/pytest.expected.json"],
    );
}

/// pytest 9 with subtests (the `subtests` fixture, `unittest`'s `subTest`): every subtest
/// a case, a test whose only failures are its subtests' passed as pytest reports it, the
/// counts those of pytest's summary (`5 failed, 5 passed, 8 subtests passed`).
#[test]
fn pytest_junit_xml_with_subtests() {
    check(
        NativeFormat::PytestJunit,
        "pytest_subtests.xml",
        Some(1),
        expect_file!["fixtures/pytest_subtests.expected.json"],
    );
}

/// The `unittest_test` runner's report of a suite built by `load_tests` (doctests, a test
/// case per backend) with subtests, skips, an expected failure and an error: unittest's
/// `Ran 11 tests`, `failures=2, errors=1, skipped=2, expected failures=1` (a subtest's
/// failure and skip count as unittest counts them), passing subtests as cases too.
#[test]
fn unittest_report() {
    check(
        NativeFormat::Unittest,
        "unittest.jsonl",
        Some(1),
        expect_file!["fixtures/unittest.expected.json"],
    );
}

#[test]
fn libtest_text() {
    check(
        NativeFormat::Libtest,
        "libtest.txt",
        Some(101),
        expect_file!["fixtures/libtest.expected.json"],
    );
}

#[test]
fn go_test_json() {
    check(
        NativeFormat::GoTestJson,
        "go.json",
        Some(1),
        expect_file!["fixtures/go.expected.json"],
    );
}

#[test]
fn go_package_that_does_not_build() {
    check(
        NativeFormat::GoTestJson,
        "go_build_failure.json",
        Some(2),
        expect_file!["fixtures/go_build_failure.expected.json"],
    );
}

#[test]
fn node_tap_reporter() {
    check(
        NativeFormat::Tap,
        "node.tap",
        Some(1),
        expect_file!["fixtures/node.expected.json"],
    );
}

#[test]
fn hand_written_tap() {
    check(
        NativeFormat::Tap,
        "shell.tap",
        Some(1),
        expect_file!["fixtures/shell.expected.json"],
    );
}

/// Each case's id, status, file and line, one per line.
fn summary(parsed: &once_test_results::Parsed) -> String {
    let mut out = String::new();
    for case in &parsed.cases {
        out.push_str(&format!(
            "{} {:?} {}:{}\n",
            case.id,
            case.status,
            case.file.as_deref().unwrap_or("-"),
            case.line.map_or("-".to_owned(), |line| line.to_string())
        ));
    }
    for problem in &parsed.problems {
        out.push_str(&format!("problem: {problem}\n"));
    }
    out
}

/// Two node test files each with a test named `same` (node's TAP names no file for a
/// passing test): the files its second reporter wrote make the ids distinct.
const TWO_NODE_FILES: &str = "TAP version 13
# Subtest: same
ok 1 - same
  ---
  duration_ms: 6.4
  ...
# Subtest: same
not ok 2 - same
  ---
  duration_ms: 1.9
  location: '/ws/.once/out/js/T/package/b.test.mjs:3:1'
  error: 'boom'
  ...
# Subtest: grp
    # Subtest: x
    ok 1 - x
      ---
      duration_ms: 0.2
      ...
    1..1
ok 3 - grp
  ---
  duration_ms: 0.8
  type: 'suite'
  ...
1..3
";

fn point_file(id_path: &str, line: u32) -> once_test_results::tap::PointFile {
    once_test_results::tap::PointFile {
        id_path: id_path.to_owned(),
        path: format!("/ws/.once/out/js/T/package/{id_path}"),
        line: Some(line),
    }
}

#[test]
fn node_cases_of_the_same_name_in_two_files_have_distinct_ids() {
    let files = [
        point_file("a.test.mjs", 2),
        point_file("b.test.mjs", 3),
        point_file("b.test.mjs", 4),
        point_file("b.test.mjs", 4),
    ];
    let parsed = once_test_results::tap::parse_with_files(TWO_NODE_FILES, Some(&files));
    expect_test::expect![[r#"
        a.test.mjs::same Passed /ws/.once/out/js/T/package/a.test.mjs:2
        b.test.mjs::same Failed /ws/.once/out/js/T/package/b.test.mjs:3
        b.test.mjs::grp > x Passed /ws/.once/out/js/T/package/b.test.mjs:4
    "#]]
    .assert_eq(&summary(&parsed));
    // Without the files (or with files that do not match the points), the bare names.
    let parsed = once_test_results::tap::parse_with_files(TWO_NODE_FILES, Some(&files[..2]));
    expect_test::expect![[r#"
        same Passed -:-
        same Failed /ws/.once/out/js/T/package/b.test.mjs:3
        grp > x Passed -:-
        problem: the runner reported the files of 2 tests for 4 test points: case ids do not name their files
    "#]]
    .assert_eq(&summary(&parsed));
}

/// Two test executables of one package, each with a test `works` (integration tests in
/// `tests/a.rs` and `tests/b.rs`): the ids are scoped by the executable, and a failure's
/// output goes to the case of its own executable.
#[test]
fn libtest_cases_of_several_executables_are_scoped_by_executable() {
    let text = "once: test executable a

running 2 tests
test works ... ok
test fails ... ok

test result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s

once: test executable b

running 2 tests
test works ... ok
test fails ... FAILED

failures:

---- fails stdout ----

thread 'fails' (7) panicked at tests/b.rs:9:5:
b fails

failures:
    fails

test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s
";
    let parsed = NativeFormat::Libtest.parse(text);
    expect_test::expect![[r#"
        a::works Passed -:-
        a::fails Passed -:-
        b::works Passed -:-
        b::fails Failed tests/b.rs:9
    "#]]
    .assert_eq(&summary(&parsed));
    assert_eq!(
        parsed.cases[3].attempts[0].message.as_deref(),
        Some("thread 'fails' (7) panicked at tests/b.rs:9:5:\nb fails")
    );
    assert_eq!(parsed.cases[1].attempts[0].message, None);
    // One executable: the bare test paths, as without the announcement.
    let single = NativeFormat::Libtest.parse("once: test executable a\ntest m::works ... ok\n");
    expect_test::expect![[r#"
        m::works Passed -:-
    "#]]
    .assert_eq(&summary(&single));
}

#[test]
fn libtest_documentation_tests_are_placed_at_their_code_block() {
    let text = "once: test executable doc
   Doc-tests cases

running 2 tests
test src/lib.rs - Calc::add (line 5) ... ok
test src/lib.rs - double (line 14) ... FAILED

failures:

---- src/lib.rs - double (line 14) stdout ----
Test executable failed (exit status: 101).

stderr:

thread 'main' (9) panicked at src/lib.rs:5:1:
assertion `left == right` failed

failures:
    src/lib.rs - double (line 14)

test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.30s
";
    let parsed = NativeFormat::Libtest.parse(text);
    // The panic's place is in the program rustdoc made: the name's line wins, and a
    // path in the name does not make a suite.
    expect_test::expect![[r#"
        src/lib.rs - Calc::add (line 5) Passed src/lib.rs:5
        src/lib.rs - double (line 14) Failed src/lib.rs:14
    "#]]
    .assert_eq(&summary(&parsed));
    assert!(parsed.cases.iter().all(|case| case.suite.is_empty()));
}
