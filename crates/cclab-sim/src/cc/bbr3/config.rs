//! BBRv3's knobs (`bbr_param(sk, …)` in the v3 code) as a config struct
//! whose `Default` is the code's values, settable from `cca_params`. The
//! same struct, built by [`Bbr3Config::v2alpha`], runs BBRv2 (`bbr2`; see
//! [`super::v2alpha`]).

use super::*;

/// Knobs (`bbr_param(sk, …)`), settable from `cca_params`. `Default` is the v3 code's.
#[derive(Clone, Debug)]
pub struct Bbr3Config {
    /// The algorithm's name: "bbr3", or "bbr2" for [`Bbr3Config::v2alpha`].
    pub name: &'static str,
    /// Where v2alpha's logic differs from v3's; all off (v3) by default.
    pub logic: Logic,
    pub startup_pacing_gain: u32,
    pub startup_cwnd_gain: u32,
    pub drain_gain: u32,
    pub cwnd_gain: u32,
    /// `bbr_pacing_gain[]`: UP, DOWN, CRUISE, REFILL.
    pub pacing_gain: [u32; 4],
    pub bw_probe_cwnd_gain: u32,
    pub min_rtt_win: Dur,
    pub probe_rtt_win: Dur,
    pub probe_rtt_mode: Dur,
    pub probe_rtt_cwnd_gain: u32,
    pub cwnd_min_target: u32,
    pub full_bw_thresh: u32,
    pub full_bw_cnt: u32,
    pub full_loss_cnt: u32,
    pub loss_thresh: u32,
    pub beta: u32,
    pub inflight_headroom: u32,
    pub bw_probe_max_rounds: u32,
    pub bw_probe_rand_rounds: u32,
    pub bw_probe_base_us: u64,
    pub bw_probe_rand_us: u64,
    pub extra_acked_gain: u32,
    pub extra_acked_win_rtts: u32,
    pub pacing_margin_percent: u32,
    /// v2alpha `bbr_bw_probe_pif_gain`: PROBE_UP ends once inflight reaches
    /// this × BDP (only with [`Logic::probe_up_ends_on_queue`]).
    pub bw_probe_pif_gain: u32,
    /// v2alpha `bbr_bw_probe_reno_gain`: probe at least every
    /// min(bw_probe_max_rounds, this × BDP) rounds (0: no Reno bound). v3
    /// hard-wires 1.0.
    pub bw_probe_reno_gain: u32,
    /// ECN (google/bbr v3 tcp_bbr.c): the sender-side ECN logic runs when the
    /// connection negotiated ECN *and* the route is marked a shallow-threshold
    /// ECN environment (`bbr_can_use_ecn`: `TCP_ECN_OK && TCP_ECN_LOW`, set by
    /// `ip route … features ecn_low`); cclab's `ecn_low` parameter stands for
    /// that route feature. Off by default, as on a route without it.
    pub ecn_low: bool,
    /// `bbr_ecn_alpha_gain` = 1/16: EWMA gain of the per-round CE ratio.
    pub ecn_alpha_gain: u32,
    /// `bbr_ecn_alpha_init` = 1.0: "on init, assume the worst".
    pub ecn_alpha_init: u32,
    /// `bbr_ecn_factor` = 1/3: on ECN, cut inflight_lo to ×(1 − ecn_factor·ecn_alpha).
    pub ecn_factor: u32,
    /// `bbr_ecn_thresh` = 1/2: a CE ratio above it means probing went too far.
    pub ecn_thresh: u32,
    /// `bbr_ecn_max_rtt_us` = 5000: the ECN logic is used only on paths with
    /// min_rtt ≤ 5 ms (0: any RTT).
    pub ecn_max_rtt_us: u64,
    /// `bbr_full_ecn_cnt` = 2: STARTUP ends after this many rounds with a CE
    /// ratio ≥ ecn_thresh.
    pub full_ecn_cnt: u32,
    /// `bbr_ecn_reprobe_gain` = 1/2: after a cycle with ECN marks and no
    /// loss, re-probe at once from about this fraction of inflight_hi (0: off).
    pub ecn_reprobe_gain: u32,
}

impl Default for Bbr3Config {
    fn default() -> Self {
        Bbr3Config {
            name: "bbr3",
            logic: Logic::V3,
            startup_pacing_gain: STARTUP_PACING_GAIN,
            startup_cwnd_gain: STARTUP_CWND_GAIN,
            drain_gain: DRAIN_GAIN,
            cwnd_gain: CWND_GAIN,
            pacing_gain: probe_bw::PACING_GAIN,
            bw_probe_cwnd_gain: BW_PROBE_CWND_GAIN,
            min_rtt_win: Dur::from_secs(MIN_RTT_WIN_SEC),
            probe_rtt_win: Dur::from_ms(PROBE_RTT_WIN_MS),
            probe_rtt_mode: Dur::from_ms(PROBE_RTT_MODE_MS),
            probe_rtt_cwnd_gain: PROBE_RTT_CWND_GAIN,
            cwnd_min_target: CWND_MIN_TARGET,
            full_bw_thresh: FULL_BW_THRESH,
            full_bw_cnt: FULL_BW_CNT,
            full_loss_cnt: FULL_LOSS_CNT,
            loss_thresh: LOSS_THRESH,
            beta: BETA,
            inflight_headroom: INFLIGHT_HEADROOM,
            bw_probe_max_rounds: BW_PROBE_MAX_ROUNDS,
            bw_probe_rand_rounds: BW_PROBE_RAND_ROUNDS,
            bw_probe_base_us: BW_PROBE_BASE_US,
            bw_probe_rand_us: BW_PROBE_RAND_US,
            extra_acked_gain: EXTRA_ACKED_GAIN,
            extra_acked_win_rtts: EXTRA_ACKED_WIN_RTTS,
            pacing_margin_percent: PACING_MARGIN_PERCENT,
            // Not knobs in v3: it ends PROBE_UP on a bw plateau and its Reno
            // bound is min(63, BDP) rounds (bbr_is_reno_coexistence_probe_time).
            bw_probe_pif_gain: BBR_UNIT * 5 / 4,
            bw_probe_reno_gain: BBR_UNIT,
            ecn_low: false,
            ecn_alpha_gain: BBR_UNIT / 16,
            ecn_alpha_init: BBR_UNIT,
            ecn_factor: BBR_UNIT / 3,
            ecn_thresh: BBR_UNIT / 2,
            ecn_max_rtt_us: 5000,
            full_ecn_cnt: 2,
            ecn_reprobe_gain: BBR_UNIT / 2,
        }
    }
}

/// Parameters `bbr3` accepts in `cca_params` (gains and fractions as reals).
pub const PARAMS: &[&str] = &[
    "startup_gain",
    "startup_cwnd_gain",
    "drain_gain",
    "cwnd_gain",
    "probe_bw_up_gain",
    "probe_bw_down_gain",
    "probe_bw_up_cwnd_gain_extra",
    "min_rtt_win_s",
    "probe_rtt_interval_ms",
    "probe_rtt_mode_ms",
    "probe_rtt_cwnd_gain",
    "cwnd_min_target",
    "full_bw_thresh",
    "full_bw_cnt",
    "full_loss_cnt",
    "loss_thresh",
    "beta",
    "inflight_headroom",
    "bw_probe_max_rounds",
    "bw_probe_rand_rounds",
    "bw_probe_base_ms",
    "bw_probe_rand_ms",
    "extra_acked_gain",
    "extra_acked_win_rtts",
    "pacing_margin_percent",
    "ecn_low",
    "ecn_alpha_gain",
    "ecn_factor",
    "ecn_thresh",
    "ecn_max_rtt_us",
    "full_ecn_cnt",
    "ecn_reprobe_gain",
];

fn fraction(
    p: &mut Params,
    name: &str,
    default_units: u32,
    lo: f64,
    hi: f64,
) -> Result<u32, CcError> {
    let v = p.take(name, default_units as f64 / BBR_UNIT as f64);
    if !(v.is_finite() && v >= lo && v <= hi) {
        return Err(CcError(format!(
            "{}: {name} = {v} must be in [{lo}, {hi}]",
            p.cca
        )));
    }
    Ok((v * BBR_UNIT as f64).round() as u32)
}

impl Bbr3Config {
    /// The `cca_params` this configuration's algorithm accepts.
    pub fn params(&self) -> &'static [&'static str] {
        if self.name == "bbr2" {
            v2alpha::PARAMS
        } else {
            PARAMS
        }
    }

    /// `d` with the parameters in `p` applied; `d` is [`Bbr3Config::default`]
    /// (bbr3) or [`Bbr3Config::v2alpha`] (bbr2) and also decides which
    /// parameters exist (a name the algorithm lacks is left for
    /// `Params::finish` to reject).
    pub(crate) fn from_params(p: &mut Params, d: Bbr3Config) -> Result<Bbr3Config, CcError> {
        let known = d.params();
        let ms = |p: &mut Params, name: &str, d: u64| -> Result<u64, CcError> {
            count_param(p, name, d, 0)
        };
        let mut pacing_gain = d.pacing_gain;
        pacing_gain[Phase::Up as usize] = gain_param(p, "probe_bw_up_gain", d.pacing_gain[0])?;
        pacing_gain[Phase::Down as usize] = gain_param(p, "probe_bw_down_gain", d.pacing_gain[1])?;
        let min_rtt_win_s = p.take("min_rtt_win_s", d.min_rtt_win.secs_f64());
        if !(min_rtt_win_s.is_finite() && min_rtt_win_s > 0.0) {
            return Err(CcError(format!(
                "{}: min_rtt_win_s = {min_rtt_win_s} must be > 0",
                p.cca
            )));
        }
        let c = Bbr3Config {
            name: d.name,
            logic: d.logic,
            startup_pacing_gain: gain_param(p, "startup_gain", d.startup_pacing_gain)?,
            startup_cwnd_gain: gain_param(p, "startup_cwnd_gain", d.startup_cwnd_gain)?,
            drain_gain: gain_param(p, "drain_gain", d.drain_gain)?,
            cwnd_gain: gain_param(p, "cwnd_gain", d.cwnd_gain)?,
            pacing_gain,
            bw_probe_cwnd_gain: if known.contains(&"probe_bw_up_cwnd_gain_extra") {
                let v = p.take(
                    "probe_bw_up_cwnd_gain_extra",
                    d.bw_probe_cwnd_gain as f64 / 4.0,
                );
                if !(v.is_finite() && (0.0..=0.75).contains(&v)) {
                    return Err(CcError(format!(
                        "{}: probe_bw_up_cwnd_gain_extra = {v} must be in [0, 0.75]",
                        p.cca
                    )));
                }
                (v * 4.0).round() as u32
            } else {
                d.bw_probe_cwnd_gain
            },
            min_rtt_win: Dur((min_rtt_win_s * 1e9).round() as u64),
            probe_rtt_win: Dur::from_ms(
                ms(p, "probe_rtt_interval_ms", d.probe_rtt_win.ns() / 1_000_000)?.max(1),
            ),
            probe_rtt_mode: Dur::from_ms(ms(
                p,
                "probe_rtt_mode_ms",
                d.probe_rtt_mode.ns() / 1_000_000,
            )?),
            probe_rtt_cwnd_gain: fraction(
                p,
                "probe_rtt_cwnd_gain",
                d.probe_rtt_cwnd_gain,
                0.0,
                64.0,
            )?,
            cwnd_min_target: count_param(p, "cwnd_min_target", d.cwnd_min_target as u64, 1)? as u32,
            full_bw_thresh: gain_param(p, "full_bw_thresh", d.full_bw_thresh)?,
            full_bw_cnt: count_param(p, "full_bw_cnt", d.full_bw_cnt as u64, 1)? as u32,
            full_loss_cnt: count_param(p, "full_loss_cnt", d.full_loss_cnt as u64, 0)?.min(15)
                as u32,
            loss_thresh: fraction(p, "loss_thresh", d.loss_thresh, 0.0, 0.99)?,
            beta: fraction(p, "beta", d.beta, 0.0, 1.0)?,
            inflight_headroom: fraction(p, "inflight_headroom", d.inflight_headroom, 0.0, 0.99)?,
            bw_probe_max_rounds: count_param(
                p,
                "bw_probe_max_rounds",
                d.bw_probe_max_rounds as u64,
                1,
            )?
            .min(255) as u32,
            bw_probe_rand_rounds: count_param(
                p,
                "bw_probe_rand_rounds",
                d.bw_probe_rand_rounds as u64,
                1,
            )? as u32,
            bw_probe_base_us: ms(p, "bw_probe_base_ms", d.bw_probe_base_us / 1000)? * 1000,
            bw_probe_rand_us: ms(p, "bw_probe_rand_ms", d.bw_probe_rand_us / 1000)?.max(1) * 1000,
            extra_acked_gain: fraction(p, "extra_acked_gain", d.extra_acked_gain, 0.0, 64.0)?,
            extra_acked_win_rtts: count_param(
                p,
                "extra_acked_win_rtts",
                d.extra_acked_win_rtts as u64,
                1,
            )? as u32,
            pacing_margin_percent: count_param(
                p,
                "pacing_margin_percent",
                d.pacing_margin_percent as u64,
                0,
            )?
            .min(99) as u32,
            bw_probe_pif_gain: if known.contains(&"bw_probe_pif_gain") {
                gain_param(p, "bw_probe_pif_gain", d.bw_probe_pif_gain)?
            } else {
                d.bw_probe_pif_gain
            },
            bw_probe_reno_gain: if known.contains(&"bw_probe_reno_gain") {
                fraction(p, "bw_probe_reno_gain", d.bw_probe_reno_gain, 0.0, 64.0)?
            } else {
                d.bw_probe_reno_gain
            },
            ecn_low: known.contains(&"ecn_low") && p.take_bool("ecn_low", d.ecn_low),
            ecn_alpha_gain: if known.contains(&"ecn_alpha_gain") {
                fraction(p, "ecn_alpha_gain", d.ecn_alpha_gain, 0.0, 1.0)?
            } else {
                d.ecn_alpha_gain
            },
            ecn_alpha_init: d.ecn_alpha_init,
            ecn_factor: if known.contains(&"ecn_factor") {
                fraction(p, "ecn_factor", d.ecn_factor, 0.0, 0.99)?
            } else {
                d.ecn_factor
            },
            ecn_thresh: if known.contains(&"ecn_thresh") {
                fraction(p, "ecn_thresh", d.ecn_thresh, 0.0, 0.99)?
            } else {
                d.ecn_thresh
            },
            ecn_max_rtt_us: if known.contains(&"ecn_max_rtt_us") {
                count_param(p, "ecn_max_rtt_us", d.ecn_max_rtt_us, 0)?.min(0x7ffff)
            } else {
                d.ecn_max_rtt_us
            },
            full_ecn_cnt: if known.contains(&"full_ecn_cnt") {
                count_param(p, "full_ecn_cnt", d.full_ecn_cnt as u64, 0)? as u32
            } else {
                d.full_ecn_cnt
            },
            ecn_reprobe_gain: if known.contains(&"ecn_reprobe_gain") {
                fraction(p, "ecn_reprobe_gain", d.ecn_reprobe_gain, 0.0, 0.99)?
            } else {
                d.ecn_reprobe_gain
            },
        };
        if c.probe_rtt_win > c.min_rtt_win {
            // tcp_bbr.c: "bbr_probe_rtt_win_ms must be <= bbr_min_rtt_win_sec * MSEC_PER_SEC".
            return Err(CcError(format!(
                "{}: probe_rtt_interval_ms must be ≤ min_rtt_win_s",
                p.cca
            )));
        }
        Ok(c)
    }
}
