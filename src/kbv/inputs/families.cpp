#include "kbv/inputs/families.h"

#include <cmath>
#include <stdexcept>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/detail/CUDAHooksInterface.h>

namespace kbv::inputs {
namespace {

using protocol::Family;

double uniform(std::mt19937_64& rng, double low, double high) {
  return std::uniform_real_distribution<double>(low, high)(rng);
}

at::Generator generator_for(const at::Device& device, std::uint64_t seed) {
  at::Generator generator =
      device.is_cuda() ? at::detail::getCUDAHooks().getNewGenerator(device.index()) : at::detail::createCPUGenerator();
  generator.set_current_seed(seed);
  return generator;
}

// Heavy tails: Student-t (Z / sqrt(chi2_df / df), chi2 as a sum of df squared normals) or
// Laplace (random sign times an exponential), scaled, with a few outliers made 10-100x larger.
at::Tensor heavy(at::IntArrayRef shape, const at::TensorOptions& options, const nlohmann::json& p, at::Generator& gen) {
  at::Tensor values;
  if (p.at("kind") == "student_t") {
    const int df = p.at("df");
    at::Tensor chi2 = at::zeros(shape, options);
    for (int i = 0; i < df; ++i) chi2.add_(at::empty(shape, options).normal_(0.0, 1.0, gen).square_());
    values = at::empty(shape, options).normal_(0.0, 1.0, gen).div_(chi2.div_(df).sqrt_());
  } else {
    at::Tensor sign = at::empty(shape, options).bernoulli_(0.5, gen).mul_(2).sub_(1);
    values = at::empty(shape, options).exponential_(1.0, gen).mul_(sign);
  }
  values.mul_(p.at("scale").get<double>());
  at::Tensor outliers = at::empty(shape, options).bernoulli_(p.at("outlier_fraction").get<double>(), gen);
  return values.mul_(outliers.mul_(p.at("outlier_scale").get<double>() - 1.0).add_(1.0));
}

// Mostly exact zeros; the rest log-uniform magnitudes in [1e-2, 1e2] with random signs; a few
// spikes of 1e3. Computed in place, each temporary freed once used: a draw of a GiB-sized input
// holds at most three of its size (every extra one is GiBs more the two workers need at once).
at::Tensor sparse(at::IntArrayRef shape, const at::TensorOptions& options, const nlohmann::json& p,
                  at::Generator& gen) {
  at::Tensor keep = at::empty(shape, options).bernoulli_(p.at("density").get<double>(), gen);
  at::Tensor values = at::empty(shape, options).uniform_(-2.0, 2.0, gen);
  at::pow_out(values, 10.0, values);
  at::Tensor sign = at::empty(shape, options).bernoulli_(0.5, gen).mul_(2).sub_(1);
  values.mul_(sign).mul_(keep);
  keep.reset();
  const at::Tensor spikes =
      at::empty(shape, options).bernoulli_(p.at("spike_fraction").get<double>(), gen).to(at::kBool);
  return at::where_out(values, spikes, sign.mul_(1e3), values);
}

}  // namespace

nlohmann::json draw_parameters(Family family, std::mt19937_64& rng) {
  switch (family) {
    case Family::standard: return nlohmann::json::object();
    case Family::normal: return {{"std", uniform(rng, 0.5, 4.0)}};
    case Family::shifted: return {{"center", uniform(rng, -8.0, 8.0)}, {"half_width", uniform(rng, 0.25, 8.0)}};
    case Family::heavy: {
      const bool student = uniform(rng, 0.0, 1.0) < 0.5;
      nlohmann::json p = {{"kind", student ? "student_t" : "laplace"},
                          {"scale", uniform(rng, 0.5, 4.0)},
                          {"outlier_fraction", 1e-3},
                          {"outlier_scale", uniform(rng, 10.0, 100.0)}};
      if (student) p["df"] = std::uniform_int_distribution<int>(2, 4)(rng);
      return p;
    }
    case Family::sparse: return {{"density", uniform(rng, 0.02, 0.2)}, {"spike_fraction", 1e-3}};
    case Family::rescaled: return {{"spread", uniform(rng, 0.5, 1.5)}};
    case Family::powered: return {{"exponent", std::exp(uniform(rng, std::log(0.25), std::log(4.0)))}};
  }
  throw std::logic_error("unknown family");
}

at::Tensor redraw(const at::Tensor& like, Family family, const nlohmann::json& p, std::uint64_t seed) {
  if (family == Family::standard || !at::isFloatingType(like.scalar_type())) return like;
  at::Generator gen = generator_for(like.device(), seed);
  // Draw in float32 (float64 for double inputs), then cast to the input's dtype.
  const auto draw_type = like.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  const at::TensorOptions options = like.options().dtype(draw_type);
  const at::IntArrayRef shape = like.sizes();
  at::Tensor values;
  switch (family) {
    case Family::normal: values = at::empty(shape, options).normal_(0.0, p.at("std").get<double>(), gen); break;
    case Family::shifted: {
      const double c = p.at("center"), w = p.at("half_width");
      values = at::empty(shape, options).uniform_(c - w, c + w, gen);
      break;
    }
    case Family::heavy: values = heavy(shape, options, p, gen); break;
    case Family::sparse: values = sparse(shape, options, p, gen); break;
    case Family::rescaled: {
      // Each entry times exp(u), u uniform in [-spread, spread]: magnitudes move by up to e^1.5
      // either way, signs stay, so a domain the problem's own inputs keep (positive, a simplex's
      // signs, a product that neither overflows nor vanishes) is kept too.
      const double s = p.at("spread");
      values = at::empty(shape, options).uniform_(-s, s, gen).exp_().mul_(like);
      break;
    }
    case Family::powered: {
      // sign(x) |x|^k: signs stay, and so does which side of 1 each magnitude is on; the values
      // crowd towards 0 (k > 1) or towards 1 (k < 1). No generator: the problem's own draw, made
      // under this draw's seed, is what differs between draws.
      const at::Tensor x = like.to(draw_type);
      values = x.sign().mul_(x.abs().pow_(p.at("exponent").get<double>()));
      break;
    }
    case Family::standard: break;
  }
  values.masked_fill_(like == 0, 0);
  return values.to(like.scalar_type()).contiguous(like.suggest_memory_format());
}

Family family_from_name(std::string_view name) {
  for (Family f : {Family::standard, Family::normal, Family::shifted, Family::heavy, Family::sparse, Family::rescaled,
                   Family::powered}) {
    if (protocol::name(f) == name) return f;
  }
  throw std::invalid_argument("unknown input family '" + std::string(name) + "'");
}

}  // namespace kbv::inputs
