// NEST 3.10's integration of its conductance-based models (iaf_cond_exp, iaf_cond_alpha), so that
// a trace matches NEST's on the grid: over each step h, the embedded Runge-Kutta-Fehlberg 4(5)
// pair (the fifth-order solution is kept, the difference of the two estimates the error) with
// adaptive step size, GSL's standard control with an absolute tolerance of 1e-3 (in each state
// variable's unit) and no relative one: a trial step is repeated with a smaller step when its
// largest error exceeds 1.1 tolerances (factor 0.9 (err/tol)^(-1/5), at least 0.2), and the next
// step may grow when it is below half of one (factor 0.9 (err/tol)^(-1/6), between 1 and 5). The
// caller keeps each neuron's step size from one time step to the next (a state column), so a
// neuron's trajectory does not depend on any other neuron, thread or rank.
//
// The models' files give the right-hand side; the scheme is the same for any number of state
// variables. NEST's adaptive exponential models (aeif_cond_exp, aeif_cond_alpha) use GSL's other
// standard control, gsl_odeiv_control_yp_new(tol, tol): the tolerance of component i is
// tol + tol |dt y'_i|, with y' the derivative at the end of the trial step (integrate_yp); and
// they act on the state after each accepted step (a spike inside the time step), which the
// caller's `accepted(y)` does there.
#pragma once
#include <algorithm>
#include <cfloat>
#include <cmath>

namespace ranvier::rkf45 {

// The Runge-Kutta-Fehlberg tableau (Fehlberg 1969): stage nodes 1/4, 3/8, 12/13, 1, 1/2; the
// fifth-order weights b5 and the differences b5 - b4 of the fifth- and fourth-order weights.
constexpr double kA21 = 1.0 / 4.0;
constexpr double kA31 = 3.0 / 32.0, kA32 = 9.0 / 32.0;
constexpr double kA41 = 1932.0 / 2197.0, kA42 = -7200.0 / 2197.0, kA43 = 7296.0 / 2197.0;
constexpr double kA51 = 439.0 / 216.0, kA52 = -8.0, kA53 = 3680.0 / 513.0, kA54 = -845.0 / 4104.0;
constexpr double kA61 = -8.0 / 27.0, kA62 = 2.0, kA63 = -3544.0 / 2565.0, kA64 = 1859.0 / 4104.0,
                 kA65 = -11.0 / 40.0;
constexpr double kB1 = 16.0 / 135.0, kB3 = 6656.0 / 12825.0, kB4 = 28561.0 / 56430.0, kB5 = -9.0 / 50.0,
                 kB6 = 2.0 / 55.0;
constexpr double kE1 = 1.0 / 360.0, kE3 = -128.0 / 4275.0, kE4 = -2197.0 / 75240.0, kE5 = 1.0 / 50.0,
                 kE6 = 2.0 / 55.0;
constexpr double kTolerance = 1e-3;   // absolute, per component (NEST: gsl_odeiv_control_y_new(1e-3, 0))
constexpr double kSafety = 0.9;       // the control's safety factor
constexpr double kOrder = 5.0;        // the order the control assumes for the pair

// The error control: NEST's built-in models take an absolute tolerance alone (AbsoluteControl);
// NESTML's NEST target takes GSL's standard control with an absolute and a relative one,
// |e_i| <= abs + rel |y_i| at the step's new y (SolutionControl, gsl_odeiv_control_y_new).
struct AbsoluteControl {
  // The error in tolerances of the components with the largest |e_i|.
  static double error(const double* e, const double*, int n) {
    double largest = 0;
    for (int i = 0; i < n; ++i) largest = std::max(largest, std::abs(e[i]));
    return largest / kTolerance;       // the largest of |e_i| / tolerance: division is monotonic
  }
};
struct SolutionControl {
  double abs, rel;
  double error(const double* e, const double* y, int n) const {
    double largest = 0;
    for (int i = 0; i < n; ++i) largest = std::max(largest, std::abs(e[i]) / (abs + rel * std::abs(y[i])));
    return largest;
  }
};

// One trial step of size dt from y0 with derivative k1 there: the fifth-order solution in y, and
// the largest error estimate over the components, in tolerances (at least DBL_MIN).
// `derivative(y, f)` writes the right-hand side at y into f.
template <int N, class Derivative, class Control = AbsoluteControl>
inline double trial_step(const Derivative& derivative, const double* y0, const double* k1, double dt, double* y,
                         const Control& control = Control{}) {
  double k2[N], k3[N], k4[N], k5[N], k6[N], t[N];
  for (int i = 0; i < N; ++i) t[i] = y0[i] + dt * (kA21 * k1[i]);
  derivative(t, k2);
  for (int i = 0; i < N; ++i) t[i] = y0[i] + dt * (kA31 * k1[i] + kA32 * k2[i]);
  derivative(t, k3);
  for (int i = 0; i < N; ++i) t[i] = y0[i] + dt * (kA41 * k1[i] + kA42 * k2[i] + kA43 * k3[i]);
  derivative(t, k4);
  for (int i = 0; i < N; ++i) t[i] = y0[i] + dt * (kA51 * k1[i] + kA52 * k2[i] + kA53 * k3[i] + kA54 * k4[i]);
  derivative(t, k5);
  for (int i = 0; i < N; ++i)
    t[i] = y0[i] + dt * (kA61 * k1[i] + kA62 * k2[i] + kA63 * k3[i] + kA64 * k4[i] + kA65 * k5[i]);
  derivative(t, k6);
  double e[N];
  for (int i = 0; i < N; ++i) {
    y[i] = y0[i] + dt * (kB1 * k1[i] + kB3 * k3[i] + kB4 * k4[i] + kB5 * k5[i] + kB6 * k6[i]);
    e[i] = dt * (kE1 * k1[i] + kE3 * k3[i] + kE4 * k4[i] + kE5 * k5[i] + kE6 * k6[i]);
  }
  return std::max(DBL_MIN, control.error(e, y, N));
}

// GSL's yp control over one trial step: as trial_step, and the largest of |e_i| / D_i with
// D_i = tol + tol |dt f_i(y)| (GSL: eps_rel (a_y |y_i| + a_dydt |h y'_i|) + eps_abs with a_y = 0,
// a_dydt = 1, eps_abs = eps_rel = tol), f at the fifth-order solution (GSL's dydt_out).
template <int N, class Derivative>
inline double trial_step_yp(const Derivative& derivative, const double* y0, const double* k1, double dt, double* y,
                            double tol) {
  double k2[N], k3[N], k4[N], k5[N], k6[N], t[N], out[N];
  for (int i = 0; i < N; ++i) t[i] = y0[i] + dt * (kA21 * k1[i]);
  derivative(t, k2);
  for (int i = 0; i < N; ++i) t[i] = y0[i] + dt * (kA31 * k1[i] + kA32 * k2[i]);
  derivative(t, k3);
  for (int i = 0; i < N; ++i) t[i] = y0[i] + dt * (kA41 * k1[i] + kA42 * k2[i] + kA43 * k3[i]);
  derivative(t, k4);
  for (int i = 0; i < N; ++i) t[i] = y0[i] + dt * (kA51 * k1[i] + kA52 * k2[i] + kA53 * k3[i] + kA54 * k4[i]);
  derivative(t, k5);
  for (int i = 0; i < N; ++i)
    t[i] = y0[i] + dt * (kA61 * k1[i] + kA62 * k2[i] + kA63 * k3[i] + kA64 * k4[i] + kA65 * k5[i]);
  derivative(t, k6);
  for (int i = 0; i < N; ++i) y[i] = y0[i] + dt * (kB1 * k1[i] + kB3 * k3[i] + kB4 * k4[i] + kB5 * k5[i] + kB6 * k6[i]);
  derivative(y, out);
  double largest = DBL_MIN;
  for (int i = 0; i < N; ++i) {
    const double e = std::abs(dt * (kE1 * k1[i] + kE3 * k3[i] + kE4 * k4[i] + kE5 * k5[i] + kE6 * k6[i]));
    largest = std::max(largest, e / (tol * std::abs(dt * out[i]) + tol));
  }
  return largest;
}

// The adaptive loop over one time step h (GSL's gsl_odeiv_evolve_apply called until the step is
// covered, as NEST does): `error(y0, k1, dt, y)` makes one trial step and returns its largest
// error in tolerances, `accepted(y)` sees (and may change) the state after each accepted step;
// `trial` is the neuron's step size (0: not yet set, h; updated for the next time step).
template <int N, class Derivative, class Error, class Accepted>
inline void integrate_steps(const Derivative& derivative, const Error& error_of, const Accepted& accepted, double h,
                            double* y, double& trial) {
  double t = 0.0;
  double step = trial > 0 ? trial : h;
  while (t < h) {
    double y0[N], k1[N];
    std::copy(y, y + N, y0);
    derivative(y0, k1);
    const double remaining = h - t;
    for (;;) {
      const bool last = step > remaining;
      if (last) step = remaining;
      const double error = error_of(y0, k1, step, y);
      const double t_next = last ? h : t + step;
      if (error > 1.1) {
        const double smaller = std::max(0.2, kSafety / std::pow(error, 1.0 / kOrder)) * step;
        if (smaller < step && t_next + smaller != t_next) {   // a real decrease: try again from y0
          step = smaller;
          continue;
        }
      } else if (error < 0.5) {
        // The step may grow: by 0.9 (err/tol)^(-1/6), between 1 and 5. Where it already reaches to
        // the end of the next interval to integrate (the rest of this time step, or the next
        // one), the next step is cut there whatever it grew to, so the factor is not computed.
        const double next_interval = t_next < h ? h - t_next : h;
        step *= step >= next_interval ? 5.0 : std::clamp(kSafety / std::pow(error, 1.0 / (kOrder + 1.0)), 1.0, 5.0);
      }
      t = t_next;
      break;
    }
    accepted(y);
  }
  trial = step;
}

// Integrates y over one time step h with adaptive steps under `control` (the absolute tolerance
// kTolerance by default: NEST's conductance-based LIF models); `trial` as integrate_steps.
template <int N, class Derivative, class Control = AbsoluteControl>
inline void integrate(const Derivative& derivative, double h, double* y, double& trial,
                      const Control& control = Control{}) {
  integrate_steps<N>(
      derivative,
      [&](const double* y0, const double* k1, double dt, double* out) {
        return trial_step<N>(derivative, y0, k1, dt, out, control);
      },
      [](double*) {}, h, y, trial);
}

// Integrates y over one time step h with adaptive steps under GSL's yp control of tolerance `tol`
// (trial_step_yp; NEST's aeif models), `accepted` after each accepted step, `trial` as
// integrate_steps.
template <int N, class Derivative, class Accepted>
inline void integrate_yp(const Derivative& derivative, const Accepted& accepted, double tol, double h, double* y,
                         double& trial) {
  integrate_steps<N>(
      derivative,
      [&](const double* y0, const double* k1, double dt, double* out) {
        return trial_step_yp<N>(derivative, y0, k1, dt, out, tol);
      },
      accepted, h, y, trial);
}

}  // namespace ranvier::rkf45
