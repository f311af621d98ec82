// desk-live.js — keeps the desk's open tab current without a reload. The crew stream's
// `desk` section (docs/push.md, "The desk's change marker": the audit trail's head and
// every draw's state) changes whenever something the desk shows may have changed; the open
// tab then fetches what it shows again, once per burst of changes (DEBOUNCE_MS after the
// first), one fetch at a time. A redraw keeps what the user typed into open forms, what
// the last action said in its result slot, the focus and the scroll position (`keeping`).

const DEBOUNCE_MS = 200;

export class DeskWatch {
  /** `refresh()`: fetch again what the open tab shows (async). */
  constructor(refresh) {
    this.refresh = refresh;
    this.marker = null; // the last `desk` section seen, as JSON
    this.timer = null;
    this.running = false;
    this.again = false;
    this.refreshes = 0; // counted for the page tests
  }

  /** A `desk` section from the stream: a change (not the first one seen) refreshes. */
  observe(section) {
    const next = JSON.stringify(section ?? null);
    const before = this.marker;
    this.marker = next;
    if (before !== null && before !== next) this.schedule();
  }

  schedule() {
    if (this.timer === null) this.timer = setTimeout(() => this.run(), DEBOUNCE_MS);
  }

  async run() {
    this.timer = null;
    if (this.running) {
      this.again = true; // once the fetch in flight is done
      return;
    }
    this.running = true;
    try {
      await this.refresh();
      this.refreshes += 1;
    } catch (err) {
      console.warn('desk: refresh failed', err);
    } finally {
      this.running = false;
      if (this.again) {
        this.again = false;
        this.schedule();
      }
    }
  }
}

function fieldKey(el) {
  if (!el || !el.name) return null;
  const form = el.closest('form');
  return `${form ? form.getAttribute('name') || '' : ''}/${el.name}`;
}

function fields(slot) {
  return [...slot.querySelectorAll('input, select, textarea')].filter((el) => fieldKey(el));
}

// a result slot (what an action answered) by its id, or the name of its form
function slotKey(el) {
  if (el.id) return `#${el.id}`;
  const form = el.parentElement && el.parentElement.querySelector(':scope > form[name]');
  return form ? `form:${form.getAttribute('name')}` : null;
}

function resultSlots(slot) {
  return [...slot.querySelectorAll('.result-slot')].filter((el) => slotKey(el));
}

/**
 * Redraw `slot` with `draw()` (synchronous: it replaces the slot's children), putting back
 * what the user typed or chose in its form fields, what the last actions said in their
 * result slots, which field had the focus (and the caret), and the scroll position.
 */
export function keeping(slot, draw) {
  const said = new Map(resultSlots(slot).filter((el) => el.childNodes.length).map((el) => [slotKey(el), [...el.childNodes]]));
  const typed = new Map();
  for (const el of fields(slot)) {
    const checkable = el.type === 'checkbox' || el.type === 'radio';
    if (checkable ? el.checked !== el.defaultChecked : el.value !== defaultOf(el)) {
      typed.set(fieldKey(el), checkable ? el.checked : el.value);
    }
  }
  const active = slot.contains(document.activeElement) ? document.activeElement : null;
  const focusKey = fieldKey(active);
  const caret = active && typeof active.selectionStart === 'number' ? [active.selectionStart, active.selectionEnd] : null;
  const { scrollX, scrollY } = window;
  draw();
  for (const el of resultSlots(slot)) {
    const kept = said.get(slotKey(el));
    if (kept && !el.childNodes.length) el.append(...kept);
  }
  for (const el of fields(slot)) {
    const key = fieldKey(el);
    if (!typed.has(key)) continue;
    const value = typed.get(key);
    if (el.type === 'checkbox' || el.type === 'radio') el.checked = value;
    else if (el.tagName !== 'SELECT' || [...el.options].some((o) => o.value === value)) el.value = value;
  }
  if (focusKey) {
    const again = fields(slot).find((el) => fieldKey(el) === focusKey);
    if (again) {
      again.focus({ preventScroll: true });
      if (caret) {
        try {
          again.setSelectionRange(caret[0], caret[1]);
        } catch {
          // a number or select field has no caret to put back
        }
      }
    }
  }
  window.scrollTo(scrollX, scrollY);
}

function defaultOf(el) {
  if (el.tagName === 'SELECT') {
    const chosen = [...el.options].find((o) => o.defaultSelected) || el.options[0];
    return chosen ? chosen.value : '';
  }
  return el.defaultValue;
}
