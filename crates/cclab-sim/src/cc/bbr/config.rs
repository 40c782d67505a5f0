//! BBRv1's static configuration: the `static const` knobs of tcp_bbr.c as a
//! config struct whose `Default` is Linux's values, settable from the
//! scenario's `cca_params`; the named variants are presets of it.

use super::variants::{CwndFeedbackConfig, StickyRtpropConfig};
use super::*;

/// Convert a gain given as a real number in `cca_params` to 1/256 units.
pub(crate) fn gain_param(p: &mut Params, name: &str, default_units: u32) -> Result<u32, CcError> {
    let v = p.take(name, default_units as f64 / BBR_UNIT as f64);
    if !(v.is_finite() && v > 0.0 && v < 64.0) {
        return Err(CcError(format!(
            "{}: {name} = {v} must be in (0, 64)",
            p.cca
        )));
    }
    Ok((v * BBR_UNIT as f64).round().max(1.0) as u32)
}

/// A positive integer parameter.
pub(crate) fn count_param(
    p: &mut Params,
    name: &str,
    default: u64,
    min: u64,
) -> Result<u64, CcError> {
    let v = p.take(name, default as f64);
    if !(v.is_finite() && v >= min as f64 && v.fract() == 0.0 && v < 1e12) {
        return Err(CcError(format!(
            "{}: {name} = {v} must be an integer ≥ {min}",
            p.cca
        )));
    }
    Ok(v as u64)
}

/// Static configuration (`static const` knobs of tcp_bbr.c), settable from
/// `cca_params`. `Default` is Linux's values.
#[derive(Clone, Debug)]
pub struct BbrConfig {
    /// `bbr_high_gain`: Startup pacing and cwnd gain, Drain cwnd gain. Param `startup_gain`.
    pub high_gain: u32,
    /// `bbr_drain_gain`. Param `drain_gain`.
    pub drain_gain: u32,
    /// `bbr_cwnd_gain`: ProbeBW cwnd gain. Param `cwnd_gain` (1.5 in `bbr_shallow`).
    pub cwnd_gain: u32,
    /// `bbr_pacing_gain[0]`, the probing phase. Param `probe_bw_up_gain`.
    pub probe_up_gain: u32,
    /// `bbr_pacing_gain[1]`, the draining phase. Param `probe_bw_down_gain`.
    pub probe_down_gain: u32,
    /// `bbr_bw_rtts`. Param `bw_filter_rounds`.
    pub bw_rtts: u32,
    /// `bbr_min_rtt_win_sec`, which is also v1's ProbeRTT interval. Param `min_rtt_win_s`.
    pub min_rtt_win: Dur,
    /// `bbr_probe_rtt_mode_ms`. Param `probe_rtt_mode_ms` (0 disables ProbeRTT, as in Linux).
    pub probe_rtt_mode: Dur,
    /// `bbr_cwnd_min_target`. Param `cwnd_min_target`.
    pub cwnd_min_target: u32,
    /// `bbr_full_bw_thresh`. Param `full_bw_thresh`.
    pub full_bw_thresh: u32,
    /// `bbr_full_bw_cnt`. Param `full_bw_cnt`.
    pub full_bw_cnt: u32,
    /// `bbr_pacing_margin_percent`. Param `pacing_margin_percent`.
    pub pacing_margin_percent: u32,
    /// `bbr_extra_acked_gain` (0 disables ack-aggregation provisioning). Param `extra_acked_gain`.
    pub extra_acked_gain: u32,
    /// `bbr_extra_acked_win_rtts`. Param `extra_acked_win_rtts`.
    pub extra_acked_win_rtts: u32,
    /// `bbr_extra_acked_max_us`. Param `extra_acked_max_ms`.
    pub extra_acked_max_us: u64,
    /// Long-term (policer) model on/off and its knobs, see [`lt_bw`].
    pub lt: lt_bw::LtBwConfig,
    /// `bbr_sticky_rtprop` (WPI thesis §5.5.2); `None` = Linux behaviour.
    pub sticky: Option<StickyRtpropConfig>,
    /// `bbr_cwnd_feedback` (WPI thesis Algorithm 1); `None` = Linux behaviour.
    pub feedback: Option<CwndFeedbackConfig>,
}

impl Default for BbrConfig {
    fn default() -> Self {
        BbrConfig {
            high_gain: HIGH_GAIN,
            drain_gain: DRAIN_GAIN,
            cwnd_gain: CWND_GAIN,
            probe_up_gain: probe_bw::PACING_GAIN[0],
            probe_down_gain: probe_bw::PACING_GAIN[1],
            bw_rtts: BW_RTTS,
            min_rtt_win: Dur::from_secs(MIN_RTT_WIN_SEC),
            probe_rtt_mode: Dur::from_ms(PROBE_RTT_MODE_MS),
            cwnd_min_target: CWND_MIN_TARGET,
            full_bw_thresh: FULL_BW_THRESH,
            full_bw_cnt: FULL_BW_CNT,
            pacing_margin_percent: PACING_MARGIN_PERCENT,
            extra_acked_gain: EXTRA_ACKED_GAIN,
            extra_acked_win_rtts: EXTRA_ACKED_WIN_RTTS,
            extra_acked_max_us: EXTRA_ACKED_MAX_US,
            lt: lt_bw::LtBwConfig::default(),
            sticky: None,
            feedback: None,
        }
    }
}

/// Parameters every BBRv1-family name accepts in `cca_params`.
pub const PARAMS: &[&str] = &[
    "startup_gain",
    "drain_gain",
    "cwnd_gain",
    "probe_bw_up_gain",
    "probe_bw_down_gain",
    "bw_filter_rounds",
    "min_rtt_win_s",
    "probe_rtt_mode_ms",
    "cwnd_min_target",
    "full_bw_thresh",
    "full_bw_cnt",
    "pacing_margin_percent",
    "extra_acked_gain",
    "extra_acked_win_rtts",
    "extra_acked_max_ms",
    "lt_bw",
    "lt_intvl_min_rtts",
    "lt_loss_thresh",
    "lt_bw_max_rtts",
    "sticky_rtprop",
    "sticky_probes",
    "sticky_jump",
    "cwnd_feedback",
    "fb_loss_thresh",
    "fb_rate_thresh",
    "fb_rtt_thresh",
    "fb_gain_min",
    "fb_gain_max",
    "fb_decrease",
    "fb_increase",
];

/// The BBRv1-family names and what each presets.
pub const NAMES: &[&str] = &[
    "bbr",
    "bbr_shallow",
    "bbr_cwnd_feedback",
    "bbr_sticky_rtprop",
];

impl BbrConfig {
    /// Build from `cca_params`; `p.cca` picks the preset the params modify.
    pub(crate) fn from_params(p: &mut Params) -> Result<BbrConfig, CcError> {
        let preset = p.cca;
        let d = BbrConfig::default();
        let cwnd_gain_default = match preset {
            // WPI thesis §5 (bbr_shallow): cwnd gain 1.5 instead of 2 in ProbeBW.
            "bbr_shallow" => BBR_UNIT * 3 / 2,
            _ => d.cwnd_gain,
        };
        let mut c = BbrConfig {
            high_gain: gain_param(p, "startup_gain", d.high_gain)?,
            drain_gain: gain_param(p, "drain_gain", d.drain_gain)?,
            cwnd_gain: gain_param(p, "cwnd_gain", cwnd_gain_default)?,
            probe_up_gain: gain_param(p, "probe_bw_up_gain", d.probe_up_gain)?,
            probe_down_gain: gain_param(p, "probe_bw_down_gain", d.probe_down_gain)?,
            bw_rtts: count_param(p, "bw_filter_rounds", d.bw_rtts as u64, 1)? as u32,
            min_rtt_win: {
                let s = p.take("min_rtt_win_s", MIN_RTT_WIN_SEC as f64);
                if !(s.is_finite() && s > 0.0) {
                    return Err(CcError(format!(
                        "{preset}: min_rtt_win_s = {s} must be > 0"
                    )));
                }
                Dur((s * 1e9).round() as u64)
            },
            probe_rtt_mode: Dur::from_ms(count_param(
                p,
                "probe_rtt_mode_ms",
                PROBE_RTT_MODE_MS,
                0,
            )?),
            cwnd_min_target: count_param(p, "cwnd_min_target", d.cwnd_min_target as u64, 1)? as u32,
            full_bw_thresh: gain_param(p, "full_bw_thresh", d.full_bw_thresh)?,
            full_bw_cnt: count_param(p, "full_bw_cnt", d.full_bw_cnt as u64, 1)? as u32,
            pacing_margin_percent: {
                let m = count_param(
                    p,
                    "pacing_margin_percent",
                    d.pacing_margin_percent as u64,
                    0,
                )?;
                if m >= 100 {
                    return Err(CcError(format!(
                        "{preset}: pacing_margin_percent must be < 100"
                    )));
                }
                m as u32
            },
            extra_acked_gain: {
                let g = p.take("extra_acked_gain", 1.0);
                if !(g.is_finite() && (0.0..64.0).contains(&g)) {
                    return Err(CcError(format!(
                        "{preset}: extra_acked_gain = {g} must be in [0, 64)"
                    )));
                }
                (g * BBR_UNIT as f64).round() as u32
            },
            extra_acked_win_rtts: count_param(
                p,
                "extra_acked_win_rtts",
                d.extra_acked_win_rtts as u64,
                1,
            )? as u32,
            extra_acked_max_us: count_param(
                p,
                "extra_acked_max_ms",
                d.extra_acked_max_us / 1000,
                0,
            )? * 1000,
            lt: lt_bw::LtBwConfig::from_params(p)?,
            sticky: None,
            feedback: None,
        };
        if p.take_bool("sticky_rtprop", preset == "bbr_sticky_rtprop") {
            c.sticky = Some(StickyRtpropConfig::from_params(p)?);
        } else {
            StickyRtpropConfig::from_params(p)?; // consume (and validate) its knobs
        }
        if p.take_bool("cwnd_feedback", preset == "bbr_cwnd_feedback") {
            c.feedback = Some(CwndFeedbackConfig::from_params(p, c.cwnd_gain)?);
        } else {
            // consume (and range-check) its knobs; their order is the loop's
            // business only when it runs, so a cwnd_gain below the default
            // fb_gain_min (1) is no error without it
            CwndFeedbackConfig::from_params(p, c.cwnd_gain.max(BBR_UNIT))?;
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use crate::cc::{parameters, Cc, ALGORITHMS};
    use std::collections::BTreeMap;

    #[test]
    fn every_listed_parameter_is_accepted_and_unknown_ones_rejected() {
        // cc::parameters() must list exactly what Params::finish accepts.
        for name in [
            "bbr",
            "bbr_shallow",
            "bbr_cwnd_feedback",
            "bbr_sticky_rtprop",
            "bbr2",
            "bbr3",
            "vegas",
        ] {
            assert!(ALGORITHMS.contains(&name), "{name} not registered");
            assert!(
                Cc::new(name, &BTreeMap::new(), 1).is_ok(),
                "{name} defaults"
            );
            for p in parameters(name).unwrap() {
                let ok = [1.0, 2.0, 0.5, 0.0, 20.0].iter().any(|v| {
                    let m: BTreeMap<String, f64> = [(p.to_string(), *v)].into();
                    Cc::new(name, &m, 1).is_ok()
                });
                assert!(ok, "{name}: {p} rejected for every test value");
            }
            let m: BTreeMap<String, f64> = [("no_such_knob".to_string(), 1.0)].into();
            let e = Cc::new(name, &m, 1).unwrap_err();
            assert!(e.0.contains("no_such_knob"), "{e}");
        }
    }

    #[test]
    fn named_variants_report_their_own_name() {
        for name in [
            "bbr",
            "bbr_shallow",
            "bbr_cwnd_feedback",
            "bbr_sticky_rtprop",
            "bbr2",
            "bbr3",
            "vegas",
        ] {
            assert_eq!(Cc::new(name, &BTreeMap::new(), 1).unwrap().name(), name);
        }
    }
}
