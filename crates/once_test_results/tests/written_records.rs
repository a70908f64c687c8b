//! Every record `once` writes reads back: random but plausible TAP, JUnit, libtest,
//! `go test -json` and unittest-report outputs (a seeded generator, so a failure names the seed that
//! reproduces it), parsed, assembled with a random outcome, merged as retries and
//! batches are, written with [`TestResults::to_json`], and read with the validator
//! [`TestResults::from_json`] — which must accept it and give back what was written.

use std::time::{Duration, Instant};

use once_test_results::{Artifacts, NativeFormat, Outcome, Runner, TestResults, assemble, merge};

/// SplitMix64: small, fast, and the same on every machine.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }

    /// A test name as runners print them: usually a plain word, sometimes empty, a
    /// duplicate-looking or synthetic-looking name, odd characters, or a long one.
    fn name(&mut self) -> String {
        match self.below(20) {
            0 => String::new(),
            1 => " ".to_owned(),
            2 => self
                .pick(&["(runner)", "(timed out)", "(bail out)", "(unnamed)"])
                .to_owned(),
            3 => format!("{} #2", self.pick(&["adds", "works", "a"])),
            4 => self
                .pick(&[
                    "a # SKIP",
                    "b \\# c",
                    "é ü 漢字",
                    "tab\there",
                    "x::y",
                    "p > q",
                    "t/sub",
                ])
                .to_owned(),
            // Up to past the 4 KiB a field keeps.
            5 => "long".repeat(self.below(1100)),
            6 => self
                .pick(&["\u{0}", "\u{1b}[31mred", "\r", "'quoted'", "\"dq\""])
                .to_owned(),
            _ => self
                .pick(&[
                    "adds",
                    "works",
                    "subtracts",
                    "parses",
                    "a",
                    "b",
                    "c",
                    "TestAdds",
                ])
                .to_owned(),
        }
    }

    fn tap(&mut self) -> String {
        let mut out = String::new();
        if self.chance(70) {
            out.push_str("TAP version 13\n");
        }
        let points = self.below(30);
        out.push_str(&format!("1..{points}\n"));
        self.tap_points(&mut out, 0, points, 0);
        if self.chance(5) {
            out.push_str(&format!("Bail out! {}\n", self.name()));
        }
        if self.chance(10) {
            let cut = self.below(out.len() + 1);
            let cut = (0..=cut)
                .rev()
                .find(|at| out.is_char_boundary(*at))
                .unwrap_or(0);
            out.truncate(cut);
        }
        out
    }

    fn tap_points(&mut self, out: &mut String, indent: usize, points: usize, depth: usize) {
        let pad = " ".repeat(indent);
        for number in 1..=points {
            if depth < 4 && self.chance(15) {
                out.push_str(&format!("{pad}    # Subtest: {}\n", self.name()));
                let inner = self.below(5);
                self.tap_points(out, indent + 4, inner, depth + 1);
            }
            let status = self.pick(&["ok", "not ok", "ok", "ok"]);
            let number = if self.chance(90) {
                format!(" {number}")
            } else {
                String::new()
            };
            let description = match self.below(4) {
                0 => String::new(),
                1 => " - ".to_owned(),
                _ => format!(" - {}", self.name()),
            };
            let directive = match self.below(10) {
                0 => " # SKIP not here".to_owned(),
                1 => " # TODO later".to_owned(),
                2 => " # skip".to_owned(),
                _ => String::new(),
            };
            out.push_str(&format!("{pad}{status}{number}{description}{directive}\n"));
            if self.chance(30) {
                out.push_str(&format!("{pad}  ---\n"));
                out.push_str(&format!(
                    "{pad}  duration_ms: {}\n",
                    self.pick(&["1.5", "-3", "x", "0", "1e400"])
                ));
                if self.chance(50) {
                    out.push_str(&format!("{pad}  type: {}\n", self.pick(&["test", "suite"])));
                }
                if self.chance(50) {
                    out.push_str(&format!(
                        "{pad}  location: '/ws/pkg/{}:{}:1'\n",
                        self.name(),
                        self.below(99)
                    ));
                }
                if self.chance(50) {
                    out.push_str(&format!("{pad}  error: |-\n{pad}    {}\n", self.name()));
                }
                out.push_str(&format!("{pad}  ...\n"));
            }
            if self.chance(10) {
                out.push_str(&format!("{pad}# {}\n", self.name()));
            }
        }
    }

    fn junit(&mut self) -> String {
        let mut out = String::from("<?xml version=\"1.0\"?>\n<testsuites>\n");
        let suites = self.below(4);
        for _ in 0..suites {
            self.junit_suite(&mut out, 0);
        }
        out.push_str("</testsuites>\n");
        if self.chance(10) {
            let cut = self.below(out.len() + 1);
            let cut = (0..=cut)
                .rev()
                .find(|at| out.is_char_boundary(*at))
                .unwrap_or(0);
            out.truncate(cut);
        }
        out
    }

    fn junit_suite(&mut self, out: &mut String, depth: usize) {
        out.push_str(&format!("<testsuite name=\"{}\">\n", xml(&self.name())));
        for _ in 0..self.below(12) {
            if depth < 3 && self.chance(10) {
                self.junit_suite(out, depth + 1);
            }
            let mut attributes = String::new();
            if self.chance(90) {
                attributes.push_str(&format!(" name=\"{}\"", xml(&self.name())));
            }
            if self.chance(60) {
                attributes.push_str(&format!(" classname=\"{}\"", xml(&self.name())));
            }
            if self.chance(40) {
                attributes.push_str(&format!(" file=\"{}\"", xml(&self.name())));
            }
            if self.chance(40) {
                attributes.push_str(&format!(" line=\"{}\"", self.pick(&["0", "7", "-1", "x"])));
            }
            if self.chance(50) {
                attributes.push_str(&format!(
                    " time=\"{}\"",
                    self.pick(&["0.01", "NaN", "-1", "3"])
                ));
            }
            match self.below(5) {
                0 => out.push_str(&format!("<testcase{attributes}/>\n")),
                1 => out.push_str(&format!(
                    "<testcase{attributes}><failure message=\"{}\">{}</failure></testcase>\n",
                    xml(&self.name()),
                    xml(&self.name())
                )),
                2 => out.push_str(&format!(
                    "<testcase{attributes}><skipped message=\"{}\"/></testcase>\n",
                    xml(&self.name())
                )),
                3 => out.push_str(&format!(
                    "<testcase{attributes}><error><![CDATA[{}]]></error></testcase>\n",
                    self.name().replace("]]>", "")
                )),
                _ => out.push_str(&format!("<testcase{attributes}></testcase>\n")),
            }
        }
        out.push_str("</testsuite>\n");
    }

    fn libtest(&mut self) -> String {
        let mut out = String::new();
        let executables = self.below(3);
        for executable in 0..executables.max(1) {
            if executables > 0 {
                out.push_str(&format!(
                    "once: test executable {}\n",
                    self.pick(&["a", "b", "a", ""])
                ));
            }
            let count = self.below(15);
            out.push_str(&format!("\nrunning {count} tests\n"));
            let mut failed = Vec::new();
            for _ in 0..count {
                let path = match self.below(4) {
                    0 => self.name(),
                    1 => format!("{}::{}", self.name(), self.name()),
                    _ => format!("tests::{}", self.name()),
                };
                let result = self.pick(&["ok", "FAILED", "ignored", "ignored, slow", "", "bench"]);
                out.push_str(&format!("test {path} ... {result}\n"));
                if result == "FAILED" {
                    failed.push(path);
                }
            }
            if !failed.is_empty() {
                out.push_str("\nfailures:\n\n");
                for path in &failed {
                    out.push_str(&format!(
                        "---- {path} stdout ----\nthread '{path}' ({executable}) panicked at src/lib.rs:{}:9:\n{}\n\n",
                        self.below(99),
                        self.name()
                    ));
                }
                out.push_str("failures:\n");
            }
            out.push_str("test result: ok. 0 passed\n");
        }
        out
    }

    fn go(&mut self) -> String {
        let mut out = String::new();
        let packages = ["p", "example.com/q", ""];
        for _ in 0..self.below(40) {
            let package = self.pick(&packages);
            let test = match self.below(6) {
                0 => None,
                1 => Some(String::new()),
                2 => Some(format!("{}/{}", self.name(), self.name())),
                3 => Some(format!("TestA/{}", self.name())),
                _ => Some(format!("Test{}", self.name())),
            };
            let action = self.pick(&["run", "output", "pass", "fail", "skip", "pause", "cont"]);
            let mut event = serde_json::json!({"Action": action, "Package": package});
            if let Some(test) = test {
                event["Test"] = test.into();
            }
            if action == "output" {
                event["Output"] =
                    format!("    x_test.go:{}: {}\n", self.below(50), self.name()).into();
            }
            if self.chance(50) {
                event["Elapsed"] = serde_json::json!(self.below(1000) as f64 / 100.0);
            }
            out.push_str(&event.to_string());
            out.push('\n');
            if self.chance(3) {
                out.push_str("# p [build failed]\n");
            }
        }
        out
    }

    /// The `unittest_test` runner's report: one JSON line per outcome, subtests naming
    /// their test, now and then a line that is not JSON or names an unknown outcome.
    fn unittest(&mut self) -> String {
        let mut out = String::new();
        for _ in 0..self.below(30) {
            if self.chance(5) {
                out.push_str(&format!("{}\n", self.name()));
                continue;
            }
            let test = format!("tests.{}.{}", self.name(), self.name());
            let subtest = self.chance(30);
            let id = if subtest {
                format!("{test} (n={})", self.below(3))
            } else {
                test.clone()
            };
            let outcome = self.pick(&[
                "success",
                "failure",
                "error",
                "skip",
                "expected_failure",
                "unexpected_success",
                "success",
                "nope",
            ]);
            let duration = [
                serde_json::json!(null),
                serde_json::json!(0.25),
                serde_json::json!(-1.0),
            ][self.below(3)]
            .clone();
            let line = serde_json::json!({
                "id": id,
                "name": if self.chance(80) { Some(self.name()) } else { None },
                "suite": self.name(),
                "outcome": outcome,
                "duration": duration,
                "message": if self.chance(50) { Some(self.name()) } else { None },
                "file": if self.chance(50) { Some(format!("/ws/pkg/{}.py", self.name())) } else { None },
                "line": self.below(40),
                "subtest_of": if subtest { Some(test) } else { None },
            });
            out.push_str(&line.to_string());
            out.push('\n');
        }
        out
    }

    fn native(&mut self, format: NativeFormat) -> String {
        match format {
            NativeFormat::Tap => self.tap(),
            NativeFormat::Junit | NativeFormat::PytestJunit => self.junit(),
            NativeFormat::Libtest => self.libtest(),
            NativeFormat::GoTestJson => self.go(),
            NativeFormat::Unittest => self.unittest(),
            NativeFormat::ExitCode => String::new(),
        }
    }

    fn outcome(&mut self) -> Outcome {
        Outcome {
            exit_code: match self.below(4) {
                0 => None,
                1 => Some(1),
                _ => Some(0),
            },
            timed_out: self.chance(10),
            log: ".once/out/pkg/T/test/log.txt".to_owned(),
            cwd: self.pick(&["pkg", ".", ""]).to_owned(),
            allow_no_cases: self.chance(2),
        }
    }
}

fn xml(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('"', "&quot;")
        .chars()
        .filter(|c| !c.is_control() || *c == '\t')
        .collect()
}

const FORMATS: [NativeFormat; 6] = [
    NativeFormat::Tap,
    NativeFormat::Junit,
    NativeFormat::PytestJunit,
    NativeFormat::Libtest,
    NativeFormat::GoTestJson,
    NativeFormat::Unittest,
];

fn record(random: &mut Random, format: NativeFormat) -> TestResults {
    let native = random.native(format);
    assemble(
        "pkg/T",
        Runner::named(format.name()),
        format.parse(&native),
        &random.outcome(),
        Artifacts {
            logs: vec![".once/out/pkg/T/test/log.txt".to_owned()],
            native_results: Vec::new(),
        },
        "/ws",
    )
}

/// Writes `record` and reads it back with the validator; panics with the seed unless
/// it reads and is what was written.
fn round_trip(record: TestResults, seed: u64, what: &str) -> TestResults {
    let written = record.within_limits();
    let bytes = written.to_json();
    match TestResults::from_json(&bytes, "pkg/T") {
        Ok(read) => {
            if read != written {
                let shown = |record: &TestResults| {
                    let text = String::from_utf8_lossy(&record.to_json()).into_owned();
                    text.chars().take(4000).collect::<String>()
                };
                panic!(
                    "seed {seed}: the {what} record read back differently\nwritten: {}\nread: {}",
                    shown(&written),
                    shown(&read)
                );
            }
            read
        }
        Err(error) => panic!(
            "seed {seed}: the {what} record `once` wrote does not validate: {error}\n{}",
            String::from_utf8_lossy(&bytes)
                .chars()
                .take(4000)
                .collect::<String>()
        ),
    }
}

#[test]
fn every_record_written_from_random_runner_output_validates() {
    let started = Instant::now();
    let mut checked = 0;
    for seed in 0..2000u64 {
        let mut random = Random(seed);
        let format = FORMATS[random.below(FORMATS.len())];
        let first = round_trip(record(&mut random, format), seed, format.name());
        // A retry of it, and batches of it with another run, are written too.
        let again = round_trip(record(&mut random, format), seed, format.name());
        round_trip(merge::retry(first.clone(), again.clone()), seed, "retried");
        if let Some(batches) = merge::batches("pkg/T", vec![first, again]) {
            round_trip(batches, seed, "batched");
        }
        checked += 1;
        if started.elapsed() > Duration::from_secs(30) {
            break;
        }
    }
    assert!(checked >= 500, "only {checked} seeds in the time bound");
}
