//! libFuzzer entry point of the `store_formats` target: `once_fuzz::store_formats` (its properties are
//! documented there and in docs/fuzzing.md).

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| once_fuzz::store_formats(data));
