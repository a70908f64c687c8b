//! libFuzzer entry point of the `test_results` target: `once_fuzz::test_results` (its properties are
//! documented there and in docs/fuzzing.md).

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| once_fuzz::test_results(data));
