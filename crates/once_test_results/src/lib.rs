//! Normalized test results, `once.test_results.v1`: the record ([`record`]), a parser
//! for each runner's native output ([`libtest`], [`junit`], [`go`], [`tap`],
//! [`unittest`]) and pytest's subtests beside its JUnit XML ([`pytest_subtests`]), the
//! assembly of a record from a parse and the process's outcome ([`assemble`]), the
//! merging of retries and batches ([`merge`]), and the writing of a record, sound and
//! bounded ([`write`]).
//!
//! Everything here is pure: the callers read the native files and logs and write the
//! record. A parser never fails: what it cannot read becomes a problem, and a run whose
//! output yields no case still gets a valid record with one case carrying the exit
//! status and the log's path.

pub mod assemble;
pub mod go;
pub mod junit;
pub mod libtest;
pub mod merge;
pub mod pytest_subtests;
pub mod record;
pub mod tap;
pub mod unittest;
pub mod write;

pub use assemble::{Outcome, assemble};
pub use record::{
    Artifacts, Attempt, AttemptStatus, Case, CaseStatus, Runner, SCHEMA, Summary, TargetStatus,
    TestResults,
};

/// The native formats a parser exists for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NativeFormat {
    /// libtest's human output (`cargo test`, a Rust test binary).
    Libtest,
    /// pytest's JUnit XML (`--junitxml`, `-o junit_family=xunit1`).
    PytestJunit,
    /// Any other JUnit XML.
    Junit,
    /// `go test -json`.
    GoTestJson,
    /// TAP, e.g. `node --test --test-reporter=tap`.
    Tap,
    /// The JSON lines the `unittest_test` kind's runner writes, one per outcome of
    /// `python3 -m unittest`.
    Unittest,
    /// Nothing to parse: one case from the exit status.
    ExitCode,
}

impl NativeFormat {
    /// The format's name in records and kind implementations.
    pub fn name(self) -> &'static str {
        match self {
            NativeFormat::Libtest => "libtest",
            NativeFormat::PytestJunit => "pytest_junit",
            NativeFormat::Junit => "junit",
            NativeFormat::GoTestJson => "go_test_json",
            NativeFormat::Tap => "tap",
            NativeFormat::Unittest => "unittest_json",
            NativeFormat::ExitCode => "exit_code",
        }
    }

    pub fn from_name(name: &str) -> Option<NativeFormat> {
        [
            NativeFormat::Libtest,
            NativeFormat::PytestJunit,
            NativeFormat::Junit,
            NativeFormat::GoTestJson,
            NativeFormat::Tap,
            NativeFormat::Unittest,
            NativeFormat::ExitCode,
        ]
        .into_iter()
        .find(|format| format.name() == name)
    }

    /// Parses `text`, a native result file or a captured output in this format.
    pub fn parse(self, text: &str) -> Parsed {
        match self {
            NativeFormat::Libtest => libtest::parse(text),
            NativeFormat::PytestJunit => junit::parse(text, junit::Dialect::Pytest),
            NativeFormat::Junit => junit::parse(text, junit::Dialect::Generic),
            NativeFormat::GoTestJson => go::parse(text),
            NativeFormat::Tap => tap::parse(text),
            NativeFormat::Unittest => unittest::parse(text),
            NativeFormat::ExitCode => Parsed::default(),
        }
    }
}

/// What a parser read: the cases in the order found, and what it could not read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Parsed {
    pub cases: Vec<Case>,
    pub problems: Vec<String>,
}

impl Parsed {
    pub fn push(&mut self, case: Case) {
        self.cases.push(case);
    }

    pub fn problem(&mut self, problem: String) {
        self.problems.push(problem);
    }
}
