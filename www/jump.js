// The scroll-to-bottom button: shown while the reader is scrolled up from the end of the
// conversation (during a reply, which then stops following, or after it), hidden at the end.
// A click goes to the end (the reply follows again) and puts the focus back in the composer.

/**
 * Wires `button` to the scrolling `list`. `atEnd()`: whether the list is (nearly) at its end;
 * `toEnd()`: scrolls it there; `afterJump()`: runs after a click (e.g. focus the composer).
 */
export function installJump({ list, button, atEnd, toEnd, afterJump }) {
  if (!list || !button) return;
  let frame = 0;
  const update = () => {
    frame = 0;
    const scrollable = list.scrollHeight > list.clientHeight + 1;
    button.hidden = !scrollable || atEnd();
  };
  const soon = () => {
    if (!frame) frame = requestAnimationFrame(update);
  };
  list.addEventListener('scroll', soon, { passive: true });
  // Content that grows (a streaming reply), or a conversation drawn anew.
  new MutationObserver(soon).observe(list, { subtree: true, childList: true, characterData: true });
  new ResizeObserver(soon).observe(list);
  button.addEventListener('click', () => {
    toEnd();
    update();
    afterJump?.();
  });
}
