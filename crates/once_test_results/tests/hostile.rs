//! Worst-case native outputs: garbage, truncation, huge and deeply nested inputs. Every
//! one gives a valid record quickly; none panics.

use std::time::Instant;

use once_test_results::{
    Artifacts, CaseStatus, NativeFormat, Outcome, Runner, TargetStatus, TestResults, assemble,
};

const FORMATS: [NativeFormat; 6] = [
    NativeFormat::Libtest,
    NativeFormat::PytestJunit,
    NativeFormat::Junit,
    NativeFormat::GoTestJson,
    NativeFormat::Tap,
    NativeFormat::Unittest,
];

fn check(format: NativeFormat, native: &str, exit_code: i32) -> TestResults {
    check_allowing(format, native, exit_code, false)
}

/// [`check`], a run of no case passing when `allow_no_cases`.
fn check_allowing(
    format: NativeFormat,
    native: &str,
    exit_code: i32,
    allow_no_cases: bool,
) -> TestResults {
    let started = Instant::now();
    let record = assemble(
        "pkg/Test",
        Runner::named(format.name()),
        format.parse(native),
        &Outcome {
            exit_code: Some(exit_code),
            timed_out: false,
            log: "log.txt".to_owned(),
            cwd: "pkg".to_owned(),
            allow_no_cases,
        },
        Artifacts::default(),
        "/ws",
    );
    assert!(
        started.elapsed().as_secs() < 5,
        "{format:?} took {:?} on {} bytes",
        started.elapsed(),
        native.len()
    );
    assert!(!record.cases.is_empty());
    assert_eq!(record.summary.total as usize, record.cases.len());
    record
}

#[test]
fn garbage_and_empty_outputs_give_one_case_from_the_exit_status() {
    let garbage = "\u{0}\u{1}<<<&&&;;{{{ not a format\n\u{fffd}";
    for (format, allow_no_cases) in FORMATS
        .into_iter()
        .flat_map(|format| [(format, true), (format, false)])
    {
        for (native, exit_code, status) in [
            ("", 0, TargetStatus::Passed),
            ("", 3, TargetStatus::Failed),
            (garbage, 0, TargetStatus::Failed),
            (garbage, 1, TargetStatus::Failed),
        ] {
            let record = check_allowing(format, native, exit_code, allow_no_cases);
            let expected = if native.is_empty() || format == NativeFormat::Libtest {
                // Free text is no problem for libtest's and TAP's line formats.
                status
            } else if format == NativeFormat::Tap {
                if exit_code == 0 {
                    TargetStatus::Passed
                } else {
                    TargetStatus::Failed
                }
            } else {
                TargetStatus::Failed
            };
            let expected = if format == NativeFormat::Libtest && native == garbage {
                if exit_code == 0 {
                    TargetStatus::Passed
                } else {
                    TargetStatus::Failed
                }
            } else {
                expected
            };
            // No case read: a successful run passes only when that is allowed.
            let empty_success = expected == TargetStatus::Passed && !allow_no_cases;
            let expected = if allow_no_cases {
                expected
            } else {
                TargetStatus::Failed
            };
            assert_eq!(
                record.status, expected,
                "{format:?} {native:?} {exit_code} {allow_no_cases}"
            );
            assert_eq!(record.cases.len(), 1, "{format:?}");
            if record.status == TargetStatus::Failed {
                let message = record.cases[0].last_message().unwrap_or_default();
                assert!(message.contains("log.txt"), "{format:?}: {message}");
                if empty_success {
                    assert!(
                        message.contains("ran no test case")
                            && message.contains("allow_no_tests = true"),
                        "{format:?}: {message}"
                    );
                }
            }
        }
    }
}

#[test]
fn truncated_junit_keeps_the_cases_read_and_fails() {
    let xml = "<testsuites><testsuite name=\"s\"><testcase classname=\"c\" name=\"a\"/><testcase classname=\"c\" name=\"b\"><failure message=\"x";
    let record = check(NativeFormat::Junit, xml, 1);
    assert_eq!(record.status, TargetStatus::Failed);
    assert!(
        record
            .cases
            .iter()
            .any(|c| c.id == "c::a" && c.status == CaseStatus::Passed)
    );
}

#[test]
fn deeply_nested_tap_and_junit_are_linear() {
    let depth = 2_000;
    let mut tap = String::new();
    for level in (0..depth).rev() {
        if level == depth - 1 {
            tap.push_str(&format!("{}ok 1 - leaf\n", " ".repeat(level * 2)));
        }
        if level > 0 {
            tap.push_str(&format!(
                "{}ok 1 - level {level}\n",
                " ".repeat((level - 1) * 2)
            ));
        }
    }
    let record = check(NativeFormat::Tap, &tap, 0);
    assert_eq!(record.cases.len(), 1);
    assert_eq!(record.status, TargetStatus::Passed);

    let xml = format!(
        "{}<testcase classname=\"c\" name=\"deep\"/>{}",
        "<testsuite name=\"s\">".repeat(depth),
        "</testsuite>".repeat(depth)
    );
    let record = check(NativeFormat::Junit, &xml, 0);
    assert_eq!(record.cases.len(), 1);
}

#[test]
fn many_cases_and_huge_messages_stay_fast_and_bounded() {
    let cases = 50_000;
    let mut libtest = String::new();
    let mut tap = String::new();
    let mut go = String::new();
    for i in 0..cases {
        libtest.push_str(&format!("test m::t{i} ... ok\n"));
        tap.push_str(&format!("    ok {i} - t{i}\n"));
        go.push_str(&format!(
            "{{\"Action\":\"pass\",\"Package\":\"p\",\"Test\":\"T/s{i}\",\"Elapsed\":0}}\n"
        ));
    }
    tap.push_str("ok 1 - parent\n");
    go.push_str("{\"Action\":\"pass\",\"Package\":\"p\",\"Test\":\"T\",\"Elapsed\":0}\n");
    for (format, native) in [
        (NativeFormat::Libtest, &libtest),
        (NativeFormat::Tap, &tap),
        (NativeFormat::GoTestJson, &go),
    ] {
        let record = check(format, native, 0);
        assert_eq!(record.cases.len(), cases, "{format:?}");
    }
    let huge = "x".repeat(8 << 20);
    let libtest = format!(
        "test a ... FAILED\n\nfailures:\n\n---- a stdout ----\n{huge}\n\nfailures:\n    a\n"
    );
    let record = check(NativeFormat::Libtest, &libtest, 101);
    let message = record.cases[0].last_message().unwrap();
    assert!(message.len() < 20 * 1024, "{}", message.len());
}

#[test]
fn a_broken_or_odd_subtests_report_still_gives_a_sound_record() {
    let junit = "<testsuites><testsuite name=\"pytest\"><testcase classname=\"tests.test_a\" \
                 name=\"test_x\" file=\"tests/test_a.py\" line=\"3\" time=\"0.1\"/></testsuite></testsuites>";
    let report = [
        "not json",
        r#"{"test": "tests/test_a.py::test_x", "outcome": "sideways"}"#,
        // The same description twice (`subtests.test()` in a loop), and a subtest whose
        // test the JUnit XML does not have.
        r#"{"test": "tests/test_a.py::test_x", "subtest": "(<subtest>)", "outcome": "passed", "duration": -1}"#,
        r#"{"test": "tests/test_a.py::test_x", "subtest": "(<subtest>)", "outcome": "failed", "message": "boom"}"#,
        r#"{"test": "tests/test_b.py::test_y", "subtest": "[m]", "outcome": "skipped"}"#,
    ]
    .join("\n");
    let parsed = once_test_results::pytest_subtests::parse(junit, &report);
    assert_eq!(parsed.problems.len(), 2, "{:?}", parsed.problems);
    let record = assemble(
        "pkg/Test",
        Runner::named("pytest"),
        parsed,
        &Outcome {
            exit_code: Some(1),
            timed_out: false,
            log: "log.txt".to_owned(),
            cwd: "pkg".to_owned(),
            allow_no_cases: false,
        },
        Artifacts::default(),
        "/ws",
    );
    let written = record.to_json();
    let read = TestResults::from_json(&written, "pkg/Test").unwrap();
    let ids: Vec<(&str, CaseStatus)> = read
        .cases
        .iter()
        .map(|case| (case.id.as_str(), case.status))
        .collect();
    assert_eq!(
        ids,
        [
            ("tests/test_a.py::test_x", CaseStatus::Passed),
            ("tests/test_a.py::test_x (<subtest>)", CaseStatus::Passed),
            ("tests/test_a.py::test_x (<subtest>) #2", CaseStatus::Failed),
            ("tests/test_b.py::test_y [m]", CaseStatus::Skipped),
        ]
    );
    assert_eq!(read.cases[3].file.as_deref(), Some("pkg/tests/test_b.py"));
}
