//! The plan: the cases, the options, the output (table and CSV), and one case run by every
//! method.
use std::io::Write;

use cdtypes::ucx::{Endpoint, Worker};

use crate::cases::Case;
use crate::methods::{Bench, Method, METHODS};

#[derive(Clone, Copy)]
pub(crate) enum Kind {
    Simple,
    NoGap,
    StructVec,
    /// the same records as `#[cdtypes(padded)]` structs (their C twin is the same C type)
    SimplePadded,
    StructVecPadded,
    DoubleVec(usize),
}

pub(crate) struct CaseDesc {
    pub(crate) name: &'static str,
    pub(crate) kind: Kind,
    latency: bool,
    bandwidth: bool,
}

pub(crate) const CASES: [CaseDesc; 9] = [
    CaseDesc {
        name: "double_vec_64",
        kind: Kind::DoubleVec(64),
        latency: true,
        bandwidth: false,
    },
    CaseDesc {
        name: "double_vec_1k",
        kind: Kind::DoubleVec(1024),
        latency: true,
        bandwidth: true,
    },
    CaseDesc {
        name: "double_vec_4k",
        kind: Kind::DoubleVec(4096),
        latency: true,
        bandwidth: false,
    },
    CaseDesc {
        name: "double_vec_128k",
        kind: Kind::DoubleVec(128 << 10),
        latency: true,
        bandwidth: true,
    },
    CaseDesc {
        name: "struct_vec",
        kind: Kind::StructVec,
        latency: true,
        bandwidth: true,
    },
    CaseDesc {
        name: "struct_simple",
        kind: Kind::Simple,
        latency: true,
        bandwidth: true,
    },
    CaseDesc {
        name: "struct_vec_padded",
        kind: Kind::StructVecPadded,
        latency: false,
        bandwidth: true,
    },
    CaseDesc {
        name: "struct_simple_padded",
        kind: Kind::SimplePadded,
        latency: false,
        bandwidth: true,
    },
    CaseDesc {
        name: "struct_simple_no_gap",
        kind: Kind::NoGap,
        latency: true,
        bandwidth: true,
    },
];

pub(crate) struct Opts {
    pub(crate) quick: bool,
    /// the test command's smoke run: every method at 16 and 4096 bytes, a few iterations
    pub(crate) smoke: bool,
    pub(crate) server: bool,
    pub(crate) csv: Option<String>,
    pub(crate) only: Option<String>,
}

pub(crate) struct Out {
    pub(crate) csv: Option<std::fs::File>,
}

impl Out {
    fn row(&mut self, case: &str, m: Method, size: usize, lat: bool, v: f64) {
        if let Some(f) = &mut self.csv {
            writeln!(
                f,
                "{case},{},{size},{},{v:.3},{}",
                m.name(),
                if lat { "latency_us" } else { "bandwidth_mbs" },
                if lat { "us" } else { "MB/s" }
            )
            .expect("write csv");
        }
    }
}

/// `BENCH_METHODS=a,b` (method names as the report prints them): only these are measured, the
/// others print `-` and write no row (e.g. to profile one method alone); unset: every method
fn wanted(m: Method) -> bool {
    static LIST: std::sync::OnceLock<Option<Vec<String>>> = std::sync::OnceLock::new();
    LIST.get_or_init(|| {
        std::env::var("BENCH_METHODS")
            .ok()
            .map(|v| v.split(',').map(|s| s.trim().to_string()).collect())
    })
    .as_ref()
    .map_or(true, |l| l.iter().any(|n| n == m.name()))
}

pub(crate) fn run_case<T: Case>(
    o: &Opts,
    w: &Worker,
    ep: &Endpoint,
    out: &mut Out,
    case: &CaseDesc,
    sub: usize,
) {
    let step = if o.smoke {
        256
    } else if o.quick {
        4
    } else {
        2
    };
    // full runs measure each point twice, methods interleaved, and keep the better value
    let reps = if o.quick { 1 } else { 2 };
    for lat in [true, false] {
        if (lat && !case.latency) || (!lat && !case.bandwidth) {
            continue;
        }
        if !o.server {
            print!(
                "# {} {} (MB = 10^6 bytes)\n# Size     ",
                case.name,
                if lat { "latency" } else { "bandwidth" }
            );
            for m in METHODS {
                print!("  {:>14}", m.name());
            }
            println!(
                "   [{}]",
                if lat {
                    "Latency (us)"
                } else {
                    "Bandwidth (MB/s)"
                }
            );
        }
        // quick: latency to 1 MiB, bandwidth to 16 MiB; full: both to 64 MiB
        let max: usize = match (o.quick, lat) {
            _ if o.smoke => 4096,
            (true, true) => 1 << 20,
            (true, false) => 16 << 20,
            _ => 64 << 20,
        };
        let mut size = 16usize;
        while size <= max {
            let Some((value, bytes)) = T::make(size, sub) else {
                size *= step;
                continue;
            };
            let window = if lat {
                1
            } else if o.smoke {
                ((64usize << 20) / bytes).clamp(1, 8)
            } else {
                ((64usize << 20) / bytes).clamp(1, 64)
            };
            let mut b = Bench::new(w, ep, value, bytes, window);
            let mut best = [f64::NAN; METHODS.len()];
            for _ in 0..reps {
                for (mi, m) in METHODS.into_iter().enumerate() {
                    if !wanted(m) {
                        continue;
                    }
                    let v = if lat {
                        let iters = match bytes {
                            _ if o.smoke => 5,
                            0..=4096 => {
                                if o.quick {
                                    200
                                } else {
                                    500
                                }
                            }
                            4097..=262_144 => {
                                if o.quick {
                                    30
                                } else {
                                    100
                                }
                            }
                            262_145..=4_194_304 => {
                                if o.quick {
                                    5
                                } else {
                                    20
                                }
                            }
                            _ => {
                                if o.quick {
                                    2
                                } else {
                                    5
                                }
                            }
                        };
                        b.latency_us(m, iters, o.server)
                    } else {
                        let total: usize = if o.quick { 32 << 20 } else { 128 << 20 };
                        let windows = if o.smoke {
                            2
                        } else {
                            (total / (bytes * window)).clamp(5, 100)
                        };
                        b.bandwidth_mbs(m, windows, o.server)
                    };
                    let better = if lat { v < best[mi] } else { v > best[mi] };
                    if best[mi].is_nan() || better {
                        best[mi] = v;
                    }
                }
            }
            if !o.server {
                print!("{size:<10}");
                for (mi, m) in METHODS.into_iter().enumerate() {
                    if !wanted(m) {
                        print!("  {:>14}", "-");
                        continue;
                    }
                    print!("  {:>14.2}", best[mi]);
                    out.row(case.name, m, size, lat, best[mi]);
                }
                println!();
                std::io::stdout().flush().ok();
            }
            size *= step;
        }
    }
}
