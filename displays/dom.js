// dom.js — the pages' DOM helpers: elements are built with createElement and textContent,
// never parsed from markup (nothing a server or a member record says can become script),
// and a container's children are replaced in one step (old nodes go with their listeners).

/**
 * Build an element: h('div', {class: 'x', text: 'hi', onclick: fn}, child, ...).
 * Props: class, text, dataset (object), on<event> (function), anything else an attribute.
 */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') el.className = value;
    else if (key === 'text') el.textContent = String(value);
    else if (key === 'dataset') Object.assign(el.dataset, value);
    else if (key.startsWith('on') && typeof value === 'function') {
      el.addEventListener(key.slice(2), value);
    } else el.setAttribute(key, value === true ? '' : String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
}

/** Replace everything inside `el` with `children`. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** Set text only when it changed (a ticking clock rewrites nothing else). */
export function setText(el, text) {
  const value = String(text);
  if (el.textContent !== value) el.textContent = value;
}

/** document.getElementById that fails loudly: a page and its script must agree. */
export function byId(id) {
  const el = document.getElementById(id);
  if (!el) throw new Error(`page element #${id} is missing`);
  return el;
}

/** Toggle `hidden` only when it changes. */
export function show(el, visible) {
  if (el.hidden === visible) el.hidden = !visible;
}
