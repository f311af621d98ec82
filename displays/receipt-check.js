// receipt-check.js — checking the receipt a draw winner presents at the claim (crew
// handheld, desk): the code typed (or its QR code scanned with the camera, where the
// browser has a BarcodeDetector and the page may use the camera), posted to the claim's
// `receipt-check` endpoint, and the daemon's verdict shown big and coloured: valid (the
// original, or reprint n of m), another member's, another draw's, another site's, forged.
// The daemon records every check on the claim (the draw's audit ledger).

import { api, path } from './api.js';
import { h, fill } from './dom.js';

export const VERDICTS = {
  valid: { title: '✓ Valid receipt', good: true },
  other_member: { title: "✗ Another member's receipt", good: false },
  other_draw: { title: '✗ Receipt of another draw', good: false },
  other_site: { title: '✗ Receipt of another casino', good: false },
  forged: { title: '✗ Forged or altered', good: false },
};
const SCAN_EVERY_MS = 250;

/** True where a QR code can be scanned: a BarcodeDetector, a camera, and the page may use it. */
export function canScan() {
  if (typeof window.BarcodeDetector !== 'function') return false;
  if (!navigator.mediaDevices || typeof navigator.mediaDevices.getUserMedia !== 'function') return false;
  const policy = document.permissionsPolicy || document.featurePolicy;
  if (policy && typeof policy.allowsFeature === 'function' && !policy.allowsFeature('camera')) return false;
  return true;
}

/** The daemon's words only say the headline again ("another member's receipt"). */
function same(title, message) {
  const plain = (text) => String(text || '').replace(/[✓✗]/g, '').trim().toLowerCase();
  return plain(title) === plain(message);
}

/** The verdict as a big coloured block: the headline, the daemon's words, the receipt. */
export function verdictNode(result) {
  const known = VERDICTS[result.verdict] || { title: String(result.verdict), good: false };
  const reprint = result.reprint > 0 && result.prints ? `reprint ${result.reprint} of ${result.prints}` : '';
  return h(
    'div',
    { class: `verdict ${result.verdict} ${known.good ? 'good' : 'bad'}`, dataset: { verdict: result.verdict } },
    h('p', { class: 'headline', text: known.title }),
    same(known.title, result.message) ? null : h('p', { class: 'words', text: result.message }),
    result.number ? h('p', { class: 'number', text: `receipt no. ${result.number}${reprint ? ` · ${reprint}` : ''}` }) : null,
  );
}

/**
 * The check for one draw claim: a field for the code, "Check receipt", "Scan" where the
 * camera can be used, and the verdict under them. onVerdict(result) after each check.
 */
export function receiptCheck({ promotion, draw, claim, onVerdict }) {
  const input = h('input', {
    type: 'text', name: 'receipt_code', placeholder: 'R123-0-…', autocomplete: 'off',
    autocapitalize: 'characters', spellcheck: 'false', maxlength: 600, 'aria-label': 'Receipt code',
  });
  const submit = h('button', { type: 'submit', class: 'check', text: 'Check receipt' });
  const scan = h('button', { type: 'button', class: 'scan', text: 'Scan QR', hidden: !canScan() });
  const video = h('video', { class: 'camera', muted: true, playsinline: true, hidden: true });
  const out = h('div', { class: 'verdict-slot', role: 'status' });
  const form = h('form', { class: 'receipt-check', autocomplete: 'off' }, h('label', {}, 'Receipt code', input), h('div', { class: 'buttons' }, submit, scan));
  const root = h('div', { class: 'receipt-check-box' }, form, video, out);
  let camera = null;

  async function run(code) {
    const text = String(code || '').trim();
    if (!text) {
      fill(out, h('p', { class: 'verdict-error', text: 'Type the code printed under the QR code, or scan it.' }));
      return;
    }
    submit.disabled = true;
    fill(out, h('p', { class: 'checking', text: 'Checking…' }));
    const url = path('promotions', promotion, 'draws', draw, 'claims', claim, 'receipt-check');
    const r = await api(url, { method: 'POST', body: { code: text } });
    submit.disabled = false;
    if (r.ok && r.data && r.data.verdict) {
      fill(out, verdictNode(r.data));
      if (onVerdict) onVerdict(r.data);
    } else {
      fill(out, h('p', { class: 'verdict-error', text: `Not checked: ${r.detail}` }));
    }
  }

  function stopCamera() {
    if (camera) {
      clearInterval(camera.timer);
      for (const track of camera.stream.getTracks()) track.stop();
      camera = null;
    }
    video.srcObject = null;
    video.hidden = true;
    scan.textContent = 'Scan QR';
  }

  async function startCamera() {
    let stream;
    try {
      stream = await navigator.mediaDevices.getUserMedia({ video: { facingMode: 'environment' } });
    } catch (err) {
      fill(out, h('p', { class: 'verdict-error', text: `The camera cannot be used: ${err.message || err}. Type the code.` }));
      return;
    }
    const detector = new window.BarcodeDetector({ formats: ['qr_code'] });
    camera = { stream, timer: null };
    video.srcObject = stream;
    video.hidden = false;
    scan.textContent = 'Stop camera';
    await video.play().catch(() => {});
    camera.timer = setInterval(async () => {
      if (camera && !root.isConnected) stopCamera(); // the claim left the page
      if (!camera || video.readyState < 2) return;
      const found = await detector.detect(video).catch(() => []);
      const qr = found.find((f) => f.rawValue);
      if (qr && camera) {
        stopCamera();
        input.value = qr.rawValue;
        run(qr.rawValue);
      }
    }, SCAN_EVERY_MS);
  }

  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    run(input.value);
  });
  scan.addEventListener('click', () => (camera ? stopCamera() : startCamera()));
  return root;
}
