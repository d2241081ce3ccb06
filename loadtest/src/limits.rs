//! Open-file limits: every connection is a file descriptor, and this machine caps them
//! per process (RLIMIT_NOFILE, about 20,000, a hard limit no process can raise). The run
//! raises its soft limit to the hard one, says what that allows, and refuses a run that
//! would not fit instead of failing part-way.

use anyhow::bail;

/// Descriptors kept for everything that is not a connection: the runtime, stdio, the
/// server's database, `/proc` reads.
pub const RESERVED_FDS: u64 = 100;

/// The open-file limit after raising the soft limit to the hard one.
#[derive(Debug, Clone, Copy)]
pub struct FileLimit {
    pub soft_before: u64,
    pub hard: u64,
}

impl FileLimit {
    /// Connections one process can hold.
    pub fn connections(&self) -> u64 {
        self.hard.saturating_sub(RESERVED_FDS)
    }
}

/// Raise this process's soft RLIMIT_NOFILE to its hard limit (children inherit it).
pub fn raise() -> std::io::Result<FileLimit> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write the struct passed to them.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let soft_before = limit.rlim_cur;
        limit.rlim_cur = limit.rlim_max;
        if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(FileLimit {
            soft_before,
            hard: limit.rlim_max,
        })
    }
}

/// Refuse a run of `wanted` simultaneous connections that this process, or the local
/// server with its connection cap, could not hold.
pub fn check(limit: &FileLimit, wanted: u64, server_cap: Option<u64>) -> anyhow::Result<()> {
    if wanted > limit.connections() {
        bail!(
            "asked for {wanted} simultaneous connections, but a process here may open at \
             most {} files (RLIMIT_NOFILE hard limit), which leaves room for {} connections \
             after {RESERVED_FDS} reserved; run fewer players and spectators",
            limit.hard,
            limit.connections()
        );
    }
    if let Some(cap) = server_cap {
        if wanted > cap {
            bail!(
                "asked for {wanted} simultaneous connections, but the local server refuses \
                 more than {cap} (its --max-connections); run fewer, or pass \
                 --server-arg=--max-connections=N (at most {})",
                limit.connections()
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_that_fits_passes_and_one_that_does_not_is_refused() {
        let limit = FileLimit {
            soft_before: 1024,
            hard: 20_000,
        };
        assert!(check(&limit, 19_000, Some(19_000)).is_ok());
        let too_many = check(&limit, 19_950, None).unwrap_err().to_string();
        assert!(too_many.contains("room for 19900"), "{too_many}");
        let over_cap = check(&limit, 19_500, Some(19_000)).unwrap_err().to_string();
        assert!(over_cap.contains("--max-connections"), "{over_cap}");
    }
}
