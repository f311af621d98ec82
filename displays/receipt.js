// receipt.js — a kiosk receipt as the pages show and print it: the receipt's own text lines
// (the same lines the thermal printer prints, `lines` of the API's ReceiptOut) in monospace,
// and its QR code. Shared by the kiosk (on screen and through receipt.css on 80 mm paper)
// and the desk's receipt lookup.
//
// The QR arrives as an SVG data URI (`qr_svg`). The pages' Content-Security-Policy admits
// images of this origin only, so a data: <img> would be refused; the SVG is rebuilt here
// element by element instead (createElementNS, nothing parsed into the page): only the
// shapes a QR is made of (svg, g, path, rect) and their geometry and fill are kept, so a
// tampered answer can carry no script, link or style.

import { h } from './dom.js';

// the SVG namespace as the HTML parser gives it to an <svg> (written out, the namespace's
// name reads like an address of another host, which the pages never name)
const SVG_NS = new DOMParser().parseFromString('<svg></svg>', 'text/html').body.firstChild.namespaceURI;
const SHAPES = new Set(['svg', 'g', 'path', 'rect']);
const NUMBER = /^-?\d+(?:\.\d+)?(?:mm|%)?$/;
const ATTRIBUTES = {
  x: NUMBER,
  y: NUMBER,
  width: NUMBER,
  height: NUMBER,
  d: /^[MmHhVvLlZz0-9.,\s-]{1,200000}$/,
  fill: /^(?:#[0-9a-fA-F]{3,8}|[a-z]{3,20})$/,
  'fill-rule': /^(?:evenodd|nonzero)$/,
  viewBox: /^[\d.\s-]{1,60}$/,
};
const DATA_URI = /^data:image\/svg\+xml;base64,([A-Za-z0-9+/=]+)$/;

/** The QR code of a receipt as an inline <svg> (class "qr"), or null if `dataUri` is not one. */
export function qrNode(dataUri) {
  const match = DATA_URI.exec(String(dataUri || ''));
  if (!match) return null;
  let doc;
  try {
    const bytes = Uint8Array.from(atob(match[1]), (c) => c.charCodeAt(0));
    doc = new DOMParser().parseFromString(new TextDecoder().decode(bytes), 'image/svg+xml');
  } catch {
    return null;
  }
  const root = doc.documentElement;
  if (!root || root.localName !== 'svg' || root.namespaceURI !== SVG_NS) return null;
  const svg = copy(root, 0);
  if (!svg.getAttribute('viewBox')) {
    // a QR drawn in mm (qrcode's rect factory): the numbers are the modules
    const size = parseFloat(root.getAttribute('width')) || 0;
    if (!size) return null;
    svg.setAttribute('viewBox', `0 0 ${size} ${size}`);
  }
  svg.removeAttribute('width');
  svg.removeAttribute('height');
  svg.setAttribute('class', 'qr');
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', 'QR code of the receipt');
  svg.setAttribute('shape-rendering', 'crispEdges');
  return svg;
}

function copy(source, depth) {
  const el = document.createElementNS(SVG_NS, source.localName);
  for (const [name, pattern] of Object.entries(ATTRIBUTES)) {
    const value = source.getAttribute(name);
    if (value !== null && pattern.test(value)) el.setAttribute(name, value.replace(/mm$/, ''));
  }
  if (depth < 4) {
    for (const child of source.children) {
      if (child.namespaceURI === SVG_NS && SHAPES.has(child.localName) && child.localName !== 'svg') {
        el.append(copy(child, depth + 1));
      }
    }
  }
  return el;
}

/**
 * A receipt: its printed lines in monospace, then the QR code. `r` is the API's ReceiptOut
 * (or the desk's receipt answer, which carries the same `lines` and `qr_svg`).
 */
export function receiptNode(r, { className = 'receipt' } = {}) {
  const lines = Array.isArray(r.lines) ? r.lines : [];
  const qr = qrNode(r.qr_svg);
  return h(
    'div',
    { class: className, dataset: { number: String(r.number ?? ''), reprint: String(r.reprint ?? 0) } },
    h('div', { class: 'lines' }, lines.map((line) => h('div', { class: 'line', text: line === '' ? '\u00a0' : line }))),
    qr ? h('div', { class: 'qr-box' }, qr) : h('p', { class: 'no-qr', text: 'QR code missing: the code above checks the receipt' }),
  );
}
