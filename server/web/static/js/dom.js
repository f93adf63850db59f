// Building DOM and SVG nodes. Text always goes in as text nodes (textContent), never as
// markup: names and chat lines come from other people.

const SVG_NS = "http://www.w3.org/2000/svg";

function build(node, attrs, children) {
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "text") node.textContent = String(value);
    else if (key === "class") node.setAttribute("class", value);
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") {
      node.addEventListener(key.slice(2), value);
    } else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** An HTML element: h("button", {class: "x", onclick: f}, "text", child, ...). */
export function h(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children);
}

/** An SVG element, like h(). */
export function s(tag, attrs, ...children) {
  return build(document.createElementNS(SVG_NS, tag), attrs, children);
}

/** Replace a node's children. */
export function fill(node, ...children) {
  node.replaceChildren();
  return build(node, {}, children);
}

/** A button that asks "sure?" in place before doing something irreversible; confirmLabel
 *  may be a function, asked each time the button is armed. */
export function confirmButton(label, confirmLabel, action, attrs = {}) {
  let armed = null;
  const button = h("button", {
    ...attrs,
    type: "button",
    onclick: () => {
      if (armed) {
        clearTimeout(armed);
        armed = null;
        button.textContent = label;
        button.classList.remove("armed");
        action();
        return;
      }
      button.textContent = typeof confirmLabel === "function" ? confirmLabel() : confirmLabel;
      button.classList.add("armed");
      armed = setTimeout(() => {
        armed = null;
        button.textContent = label;
        button.classList.remove("armed");
      }, 4000);
    },
  }, label);
  return button;
}

/** Scroll `list` (a scrolling box with position: relative) just enough to show `item`,
 *  without moving the page: scrollIntoView would scroll the window as well. */
export function revealIn(list, item) {
  const top = item.offsetTop;
  const bottom = top + item.offsetHeight;
  if (top < list.scrollTop) list.scrollTop = top;
  else if (bottom > list.scrollTop + list.clientHeight) list.scrollTop = bottom - list.clientHeight;
}
