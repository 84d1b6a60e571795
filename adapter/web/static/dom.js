/* The DOM builder both pages use (the compare page of `hybrid serve`, the evaluation report):
 * el(tag, attrs, ...children). attrs: class, text (the textContent), on<event> listeners, any other
 * as an attribute (true: present and empty; null, undefined or false: left out). Children: nodes, or
 * any other value as a text node, so nothing a page shows is parsed as HTML. */
(function () {
  "use strict";

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children) {
      if (c === null || c === undefined) continue;
      node.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return node;
  }

  window.Dom = { el };
})();
