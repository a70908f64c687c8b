//! Each runner's real native output (captured from pytest, libtest, `go test -json`,
//! Node's TAP reporter and a hand-written TAP stream) assembled into the exact
//! `once.test_results.v1` record expected of it (`tests/fixtures/*.expected.json`).

use expect_test::{ExpectFile, expect_file};
use once_test_results::{Artifacts, NativeFormat, Outcome, Runner, assemble};

fn check(format: NativeFormat, fixture: &str, exit_code: Option<i32>, expected: ExpectFile) {
    let path = format!("{}/tests/fixtures/{fixture}", env!("CARGO_MANIFEST_DIR"));
    let native = std::fs::read_to_string(&path).unwrap();
    let outcome = Outcome {
        exit_code,
        timed_out: false,
        log: "pkg/.once/out/pkg/Test/test/log.txt".to_owned(),
        cwd: "pkg".to_owned(),
    };
    let artifacts = Artifacts {
        logs: vec![outcome.log.clone()],
        native_results: vec![format!("pkg/.once/out/pkg/Test/test/{fixture}")],
    };
    let record = assemble(
        "pkg/Test",
        Runner::named(format.name()),
        format.parse(&native),
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
