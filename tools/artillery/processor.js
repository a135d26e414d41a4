// whileTrue condition of scenario.yml: true until lth_duration_s seconds after the first check in
// this worker (= the first user's first request), so every user stops at the same deadline.
let deadline = null;

function beforeDeadline(context, next) {
  const now = Date.now();
  if (deadline === null) {
    deadline = now + Number(context.vars.lth_duration_s) * 1000;
  }
  return next(now < deadline);
}

module.exports = { beforeDeadline };
