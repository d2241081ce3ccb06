//! The process's memory allocator: mimalloc, for the server binary, the load test's
//! `serve` and every test alike (declared here, in the library, so they cannot differ).
//!
//! Why not the system's (glibc's) malloc: at saturation its `malloc` and `free`, with the
//! arena locks taken when a frame allocated on one worker thread is freed on another, are
//! a large share of the server's worker time; mimalloc's thread-local heaps take no lock.
//!
//! Memory a thread frees goes back to the system at once (`purge_delay` 0) rather than
//! after mimalloc's default delay, which it only acts on when that thread allocates again.
//! argon2id's working memory (19 MiB by default, one block per password hashed or
//! verified, on the blocking threads) otherwise stayed resident once per hashing thread.

use libmimalloc_sys::{mi_option_get, mi_option_set, mi_option_t};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc 3's `mimalloc.h` (the bindings do not name it).
const PURGE_DELAY: mi_option_t = 15;

/// Sets the allocator's options; called once at the start of [`crate::run`].
pub fn configure() {
    // SAFETY: sets an integer option, read by mimalloc at its next purge.
    unsafe { mi_option_set(PURGE_DELAY, 0) };
}

/// The purge delay in force, in milliseconds.
pub fn purge_delay_ms() -> std::os::raw::c_long {
    // SAFETY: reads an integer option.
    unsafe { mi_option_get(PURGE_DELAY) }
}

#[cfg(test)]
mod tests {
    use std::hint::black_box;

    use super::*;

    /// Set in the process the test below starts to run itself alone.
    const PROBE: &str = "ELEMENTALS_ALLOC_PROBE";

    /// This process's resident memory, from `/proc/self/status`.
    fn rss_bytes() -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").expect("procfs");
        let kib: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("a VmRSS line");
        kib * 1024
    }

    #[test]
    fn large_blocks_freed_on_other_threads_go_back_to_the_system() {
        if std::env::var_os(PROBE).is_none() {
            // In a process of its own: the options are process-wide, and in this one other
            // tests allocate and free alongside.
            let status = std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "alloc::tests::large_blocks_freed_on_other_threads_go_back_to_the_system",
                    "--test-threads=1",
                ])
                .env(PROBE, "1")
                .status()
                .expect("running this test in a process of its own");
            assert!(status.success(), "the probe process failed: {status}");
            return;
        }
        assert_eq!(purge_delay_ms(), 1000, "option 15 is the purge delay (1 s)");
        configure();
        assert_eq!(purge_delay_ms(), 0);
        let before = rss_bytes();
        // As password hashes do: a 19 MiB block written through, on several blocking
        // threads at once, again and again.
        for _ in 0..3 {
            let hashers: Vec<_> = (0..4)
                .map(|_| std::thread::spawn(|| drop(black_box(vec![1u8; 19 << 20]))))
                .collect();
            for hasher in hashers {
                hasher.join().unwrap();
            }
        }
        let kept = rss_bytes().saturating_sub(before);
        assert!(
            kept < 8 << 20,
            "{} MiB of 228 MiB written stayed resident",
            kept >> 20
        );
    }
}
