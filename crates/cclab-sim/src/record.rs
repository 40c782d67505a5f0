//! Sampled time series, preallocated by sample count (memory does not grow
//! with the number of packets), and per-packet distributions kept as
//! log-linear histograms (`cclab_netmodel::hist`: a few hundred counters per
//! flow). Columns and units: docs/record.md ("Engine output"). Values an
//! algorithm does not have are NaN.

pub use cclab_netmodel::hist::{LogHist, SUB_BITS as HIST_SUB_BITS};

/// One column per field of docs/record.md's raw `flows` table.
#[derive(Default, Debug, Clone)]
pub struct FlowColumns {
    pub time_ns: Vec<u64>,
    pub flow_id: Vec<u32>,
    pub active: Vec<bool>,
    pub delivered_bytes: Vec<u64>,
    pub egress_bytes: Vec<u64>,
    pub sent_bytes: Vec<u64>,
    /// Data segments sent, retransmissions included (Linux's `tcpi_data_segs_out`).
    pub sent_segs: Vec<u64>,
    pub cwnd_bytes: Vec<u64>,
    pub inflight_bytes: Vec<u64>,
    pub ssthresh_bytes: Vec<f64>,
    pub srtt_ns: Vec<f64>,
    pub rtt_ns: Vec<f64>,
    pub min_rtt_ns: Vec<f64>,
    pub pacing_rate_bps: Vec<f64>,
    pub retrans_segs: Vec<u64>,
    pub lost_segs: Vec<u64>,
    pub rto_count: Vec<u64>,
    pub cc_state: Vec<u8>,
    pub cc_w_max_bytes: Vec<f64>,
    pub cc_bw_bps: Vec<f64>,
    pub cc_min_rtt_ns: Vec<f64>,
    pub cc_pacing_gain: Vec<f64>,
    pub cc_cwnd_gain: Vec<f64>,
    pub cc_inflight_hi_bytes: Vec<f64>,
    pub cc_inflight_lo_bytes: Vec<f64>,
    pub cc_bw_hi_bps: Vec<f64>,
    pub cc_bw_lo_bps: Vec<f64>,
}

impl FlowColumns {
    pub fn with_capacity(n: usize) -> Self {
        macro_rules! v {
            () => {
                Vec::with_capacity(n)
            };
        }
        FlowColumns {
            time_ns: v!(),
            flow_id: v!(),
            active: v!(),
            delivered_bytes: v!(),
            egress_bytes: v!(),
            sent_bytes: v!(),
            sent_segs: v!(),
            cwnd_bytes: v!(),
            inflight_bytes: v!(),
            ssthresh_bytes: v!(),
            srtt_ns: v!(),
            rtt_ns: v!(),
            min_rtt_ns: v!(),
            pacing_rate_bps: v!(),
            retrans_segs: v!(),
            lost_segs: v!(),
            rto_count: v!(),
            cc_state: v!(),
            cc_w_max_bytes: v!(),
            cc_bw_bps: v!(),
            cc_min_rtt_ns: v!(),
            cc_pacing_gain: v!(),
            cc_cwnd_gain: v!(),
            cc_inflight_hi_bytes: v!(),
            cc_inflight_lo_bytes: v!(),
            cc_bw_hi_bps: v!(),
            cc_bw_lo_bps: v!(),
        }
    }
    pub fn len(&self) -> usize {
        self.time_ns.len()
    }
    pub fn is_empty(&self) -> bool {
        self.time_ns.is_empty()
    }
}

/// One column per field of docs/record.md's raw `link` table: one row per
/// link per sample, ordered by time, then link index.
#[derive(Default, Debug, Clone)]
pub struct LinkColumns {
    pub time_ns: Vec<u64>,
    /// Index of the link in the IR's `links`.
    pub link_id: Vec<u32>,
    pub queue_bytes: Vec<u64>,
    pub queue_packets: Vec<u64>,
    pub sojourn_sum_ns: Vec<u64>,
    pub departed_packets: Vec<u64>,
    pub egress_bytes: Vec<u64>,
    pub arrival_bytes: Vec<u64>,
    pub drops_overflow: Vec<u64>,
    pub drops_random: Vec<u64>,
    pub drops_aqm: Vec<u64>,
    pub marks_ce: Vec<u64>,
    pub drops_policer: Vec<u64>,
    pub capacity_bps: Vec<f64>,
    pub delay_ns: Vec<u64>,
}

/// End-of-run totals, for the conservation check (docs/validation.md, check 6).
#[derive(Default, Debug, Clone, PartialEq, Eq)]
pub struct Counters {
    pub sent_packets: u64,
    pub delivered_packets: u64,
    pub dropped_packets: u64,
    pub queued_packets: u64,
    pub in_flight_packets: u64,
    pub events: u64,
}

/// Per-flow facts that are not time series.
#[derive(Default, Debug, Clone)]
pub struct FlowInfo {
    pub id: u32,
    pub cca: String,
    /// When the receiver had every byte of a finite flow (None: unfinished / unlimited).
    pub completion_ns: Option<u64>,
    /// Data segments that reached the receiver marked CE.
    pub ce_segments: u64,
    /// A flow that ended (finite, or stopped and drained: the sender had
    /// every byte acknowledged): when its receiver last got new in-order
    /// data. None for a flow still sending at the end of the run.
    pub end_ns: Option<u64>,
}

#[derive(Default, Debug, Clone)]
pub struct Output {
    pub flows: FlowColumns,
    pub link: LinkColumns,
    /// (algorithm name, state names by code) for each algorithm in the run.
    pub state_names: Vec<(String, Vec<String>)>,
    pub counters: Counters,
    pub flow_info: Vec<FlowInfo>,
    /// Per flow: the RTT sample (ns) of every ACK that gave one, arriving
    /// in the measure window (docs/record.md "Distributions").
    pub rtt_hists: Vec<LogHist>,
    /// The bottleneck: the sojourn (ns) of every packet that left it in the
    /// measure window (a topology: of every link, together).
    pub sojourn_hist: LogHist,
}

impl FlowColumns {
    /// Move the rows out, leaving empty columns with room for `n` rows.
    pub fn take(&mut self, n: usize) -> FlowColumns {
        std::mem::replace(self, FlowColumns::with_capacity(n))
    }
}

impl LinkColumns {
    /// Move the rows out, leaving empty columns.
    pub fn take(&mut self) -> LinkColumns {
        std::mem::take(self)
    }
}

#[inline]
pub fn opt(x: Option<f64>) -> f64 {
    x.unwrap_or(f64::NAN)
}
