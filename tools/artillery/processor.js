// whileTrue condition of scenario.yml (and of flow.yml's outer loop): true until lth_duration_s seconds after the first check in
// this worker (= the first user's first request), so every user stops at the same deadline.
let deadline = null;

function beforeDeadline(context, next) {
  const now = Date.now();
  if (deadline === null) {
    deadline = now + Number(context.vars.lth_duration_s) * 1000;
  }
  return next(now < deadline);
}

// flow.yml (the login flow): the inner loop's whileTrue, checked after each GET (a loop's first turn runs
// unchecked). It ends the loop after lth_relogin_every GETs (0: never), so the user logs in again, and at the
// deadline. The count is the user's own (context.vars).
function getAgain(context, next) {
  const every = Number(context.vars.lth_relogin_every);
  if (every > 0) {
    const gets = (context.vars.lth_gets || 0) + 1;
    context.vars.lth_gets = gets >= every ? 0 : gets;
    if (gets >= every) {
      return next(false);
    }
  }
  return beforeDeadline(context, next);
}

// flow.yml: the GET's beforeRequest hook: the captured token as the value of the header lth_token_header names
// (a YAML header key is not templated).
function carryToken(requestParams, context, ee, next) {
  requestParams.headers = { ...requestParams.headers, [context.vars.lth_token_header]: context.vars.lth_token };
  return next();
}

module.exports = { beforeDeadline, getAgain, carryToken };
