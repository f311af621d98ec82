// auth.js — a machine page's token (a kiosk's: from `?token=` or typed into its form and
// kept in sessionStorage, so it lives as long as the tab), the page's site and area from the
// query string, and signing a page out with its reason. People (crew, desk) hold no token:
// they sign in with a staff number and PIN and their session is an HttpOnly cookie
// (signin.js).

const KEY = `bonusd.token${location.pathname.replace(/\W+/g, '.')}`;

export function getToken() {
  const fromUrl = new URLSearchParams(location.search).get('token');
  if (fromUrl) return fromUrl;
  try {
    return sessionStorage.getItem(KEY) || '';
  } catch {
    return '';
  }
}

export function setToken(token) {
  try {
    sessionStorage.setItem(KEY, token.trim());
  } catch {
    // private mode: the token lives only as long as the page
  }
}

export function clearToken() {
  try {
    sessionStorage.removeItem(KEY);
  } catch {
    // nothing kept
  }
}

export function param(name) {
  return new URLSearchParams(location.search).get(name) || '';
}

/** The page's site: `?site=`, else the daemon's own (written into the page, or /health). */
export async function site() {
  const given = param('site');
  if (given) return given;
  const meta = document.querySelector('meta[name="bonusd-site"]');
  if (meta && meta.content) return meta.content;
  try {
    const r = await fetch('/health', { cache: 'no-store' });
    return (await r.json()).site || '';
  } catch {
    return '';
  }
}

const SIGNED_OUT = `${KEY}.signedout`;

/**
 * The daemon refused the token of an open page (revoked, expired, wrong role): forget it
 * and reload, so nothing the page showed (names, cards, alerts) stays on screen or in the
 * DOM. The reason is shown once on the login form of the reloaded page.
 */
export function signOut(reason) {
  clearToken();
  try {
    sessionStorage.setItem(SIGNED_OUT, String(reason || 'token refused').slice(0, 200));
  } catch {
    // private mode: the reload still clears the page
  }
  location.reload();
}

/** The reason of the last signOut() on this page, once; '' when there was none. */
export function signedOutReason() {
  try {
    const why = sessionStorage.getItem(SIGNED_OUT) || '';
    sessionStorage.removeItem(SIGNED_OUT);
    return why;
  } catch {
    return '';
  }
}

/**
 * Wire a login form: <form id=login> with an <input name=token>. Calls onToken(token) at
 * start when a token is kept, and after each submit.
 */
export function loginForm(form, onToken) {
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const token = new FormData(form).get('token');
    if (typeof token === 'string' && token.trim()) {
      setToken(token);
      form.reset();
      onToken(token.trim());
    }
  });
  const kept = getToken();
  if (kept) onToken(kept);
}
