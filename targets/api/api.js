// The api target's login and token check (njs 0.7.9, Debian's libnginx-mod-http-js), loaded by lth-http-api.conf.
// A token is `<nonce>.<HMAC-SHA256 of the nonce, base64url>`, keyed by the stack's secret ($lth_secret, made per
// staging by the harness): a new nonce per login ($request_id), and a token of another stack does not verify.
const crypto = require('crypto');

function sign(r, nonce) {
    return crypto.createHmac('sha256', r.variables.lth_secret).update(nonce).digest('base64url');
}

// a === b for two strings, in a time that depends on their length only, not on where they first differ (njs's
// crypto module has no timingSafeEqual): the password and a token's signature are compared so.
function same(a, b) {
    if (typeof a != 'string' || typeof b != 'string' || a.length != b.length) {
        return false;
    }
    let differ = 0;
    for (let i = 0; i < a.length; i++) {
        differ |= a.charCodeAt(i) ^ b.charCodeAt(i);
    }
    return differ === 0;
}

function refuse(r, status, error) {
    r.headersOut['Content-Type'] = 'application/json';
    r.return(status, JSON.stringify({error: error}));
}

// POST /api/auth/login {"username": ..., "password": ...}: 200 {"token": ...}, 401 for anything else.
function login(r) {
    if (r.method != 'POST') {
        return refuse(r, 405, 'POST the credentials as JSON');
    }
    let credentials = null;
    try {
        credentials = JSON.parse(r.requestText);
    } catch (e) {
        return refuse(r, 401, 'the body is not JSON');
    }
    if (credentials === null || typeof credentials != 'object' || typeof credentials.username != 'string'
        || !same(credentials.password, r.variables.lth_password)) {
        return refuse(r, 401, 'wrong username or password');
    }
    const nonce = r.variables.request_id;
    r.headersOut['Content-Type'] = 'application/json';
    r.return(200, JSON.stringify({token: nonce + '.' + sign(r, nonce)}));
}

// $lth_auth: "1" when the Authorization header (the token, or `Bearer <token>`) carries this stack's signature.
function authorized(r) {
    const header = r.headersIn.Authorization || '';
    const token = header.startsWith('Bearer ') ? header.slice(7) : header;
    const dot = token.indexOf('.');
    return dot > 0 && same(token.slice(dot + 1), sign(r, token.slice(0, dot))) ? '1' : '0';
}

export default {login, authorized};
