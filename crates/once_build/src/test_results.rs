//! Reading a test target's normalized results, `once.test_results.v1`, from where its
//! `test` capability leaves them (`.once/out/<package>/<name>/test/test_results.json`,
//! the `results_path` of `once query tests`): `once query test-results` and the MCP tool
//! `once_query_test_results`.

use std::path::Path;

use once_analysis::{Analysis, Cancellable};
use once_test_results::TestResults;

/// Why no results could be returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadError {
    /// No target of that id has a `test` capability; the message says what to run.
    NotATest(String),
    /// The test has not written results yet.
    NotRun { target: String, path: String },
    /// The file exists but cannot be read or is not a sound record.
    Unreadable { path: String, reason: String },
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::NotATest(message) => f.write_str(message),
            ReadError::NotRun { target, path } => write!(
                f,
                "`{target}` has no results yet (`{path}` does not exist): run `once test {target}`"
            ),
            ReadError::Unreadable { path, reason } => write!(f, "cannot read `{path}`: {reason}"),
        }
    }
}

/// The results of the test target `target`, read below `root` without following links
/// and checked against the record's rules.
pub fn read(
    analysis: &Analysis,
    root: &Path,
    target: &str,
    listing_hint: impl Fn(once_analysis::Listing) -> &'static str,
) -> Cancellable<Result<TestResults, ReadError>> {
    let tests = analysis.tests()?;
    let Some(test) = tests.iter().find(|test| test.id == target) else {
        let message = match analysis.lookup_target(target)? {
            Ok(_) => format!(
                "`{target}` has no `test` capability; `once query tests` lists the test targets"
            ),
            Err(not_found) => not_found.with_hint(listing_hint),
        };
        return Ok(Err(ReadError::NotATest(message)));
    };
    let path = test.results_path.clone();
    Ok(match once_db::confined::read_confined(root, &path) {
        Ok(Some(bytes)) => TestResults::from_json(&bytes, target)
            .map_err(|reason| ReadError::Unreadable { path, reason }),
        Ok(None) => Err(ReadError::NotRun {
            target: target.to_owned(),
            path,
        }),
        Err(error) => Err(ReadError::Unreadable {
            path,
            reason: error.to_string(),
        }),
    })
}
