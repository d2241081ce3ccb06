//! Which clients one generator process runs: all of the run's, or a generator child's
//! share (`--processes`).

use crate::options::RunOptions;

/// The clients one generator process runs: all of them, or a generator child's share
/// (`--processes`), numbered as in the whole run (names and source addresses follow the
/// number, so the children's never meet).
pub struct Slice {
    pub players: std::ops::Range<u64>,
    pub spectators: std::ops::Range<u64>,
    /// A generator child: says on stdout when its hold starts and ends, and writes its
    /// raw figures here.
    pub dump: Option<std::path::PathBuf>,
    /// Its share of the ramp rate.
    pub ramp_per_s: f64,
}

impl Slice {
    pub fn whole(options: &RunOptions) -> Slice {
        Slice {
            players: 0..options.players,
            spectators: 0..options.spectators,
            dump: None,
            ramp_per_s: options.ramp_per_s.max(1) as f64,
        }
    }

    /// Share `index` of `count`.
    pub fn share(options: &RunOptions, index: u64, count: u64) -> Slice {
        let part = |total: u64| index * total / count..(index + 1) * total / count;
        Slice {
            players: part(options.players),
            spectators: part(options.spectators),
            dump: options.dump.clone(),
            ramp_per_s: options.ramp_per_s.max(1) as f64 / count as f64,
        }
    }

    pub fn clients(&self) -> u64 {
        (self.players.end - self.players.start) + (self.spectators.end - self.spectators.start)
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::options::Cli;

    #[test]
    fn the_shares_of_k_generators_cover_every_client_once() {
        let cli = Cli::try_parse_from([
            "elementals-loadtest",
            "--players=50000",
            "--spectators=7",
            "--ramp-per-s=600",
        ])
        .unwrap();
        let shares: Vec<Slice> = (0..3).map(|i| Slice::share(&cli.run, i, 3)).collect();
        assert_eq!(shares[0].players, 0..16_666);
        assert_eq!(shares[2].players, 33_333..50_000);
        let mut next = (0, 0);
        for share in &shares {
            assert_eq!((share.players.start, share.spectators.start), next);
            next = (share.players.end, share.spectators.end);
            assert_eq!(share.ramp_per_s, 200.0);
        }
        assert_eq!(next, (50_000, 7));
        let clients: u64 = shares.iter().map(Slice::clients).sum();
        assert_eq!(clients, Slice::whole(&cli.run).clients());
    }
}
