// Autoscaling advice, a pure function of what a cluster measured.
#ifndef TUTTI_PLANNER_SCALING_H_
#define TUTTI_PLANNER_SCALING_H_

namespace tutti {

// Symphony §3.5's autoscaling advice: with bad rate r above the threshold,
// add N·r/(1 − r) GPUs; otherwise remove N·f, f the idle fraction.
struct ScalingAdvice {
  int add = 0;
  int remove = 0;
};
ScalingAdvice AdviseScaling(int gpus, double bad_rate, double idle_fraction, double bad_rate_threshold = 0.01);

}  // namespace tutti

#endif  // TUTTI_PLANNER_SCALING_H_
