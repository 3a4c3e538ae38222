#include "aotgrad/autograd.h"

namespace aotgrad::autograd {
namespace {
thread_local bool g_grad_enabled = true;
}

bool grad_mode_enabled() { return g_grad_enabled; }

NoGradGuard::NoGradGuard() : prev_(g_grad_enabled) { g_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { g_grad_enabled = prev_; }
EnableGradGuard::EnableGradGuard() : prev_(g_grad_enabled) { g_grad_enabled = true; }
EnableGradGuard::~EnableGradGuard() { g_grad_enabled = prev_; }

}  // namespace aotgrad::autograd
