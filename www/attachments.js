// Attachments of the chat page: images and other files added to the next message with the
// paperclip button, by pasting, or by dropping them on the composer. Each is previewed in the
// composer (a thumbnail, or a chip with its name, type and size) with a × to remove it, and goes
// out as an AI SDK-style part of the user message: `{ type: 'image', image, mediaType, filename }`
// or `{ type: 'file', data, mediaType, filename }`, the content as a data: URL. Memory stores
// them as `file` parts, which `renderParts()` draws in the sent message and after a reload.

/** At most this many attachments per message, each at most MAX_BYTES. */
export const MAX_FILES = 6;
export const MAX_BYTES = 5 * 1024 * 1024;

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/** "312 B", "4.1 KB", "2.3 MB". */
export function formatBytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/** The decoded size of a data: URL's content. */
function dataUrlBytes(url) {
  const comma = url.indexOf(',');
  if (comma < 0) return 0;
  const head = url.slice(0, comma);
  const data = url.slice(comma + 1);
  return head.endsWith(';base64') ? Math.floor((data.replace(/=+$/, '').length * 3) / 4) : decodeURIComponent(data).length;
}

function readAsDataUrl(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result));
    reader.onerror = () => reject(reader.error ?? new Error('could not read the file'));
    reader.readAsDataURL(file);
  });
}

/** One attachment's preview: a thumbnail for an image, else a chip with name, type and size. */
function preview({ url, mediaType, filename, bytes }) {
  const isImage = mediaType.startsWith('image/') && url.startsWith('data:');
  const box = el('figure', `attachment ${isImage ? 'image' : 'file'}`);
  box.dataset.name = filename ?? '';
  box.dataset.type = mediaType;
  if (isImage) {
    const img = el('img');
    img.src = url;
    img.alt = filename || 'an attached image';
    box.append(img);
  } else {
    const ext = /\.([A-Za-z0-9]{1,5})$/.exec(filename ?? '')?.[1] ?? mediaType.split('/')[1]?.slice(0, 4) ?? '';
    const icon = el('span', 'attachment-icon', ext);
    icon.setAttribute('aria-hidden', 'true');
    box.append(icon);
  }
  const caption = el('figcaption');
  caption.append(el('span', 'attachment-name', filename || (isImage ? 'image' : 'file')), el('span', 'attachment-info', `${mediaType} · ${formatBytes(bytes)}`));
  box.append(caption);
  return box;
}

/**
 * The attachments of a user message's parts (UI `file` parts, or the input `image` / `file`
 * parts this module makes) as previews in `container` (before `before`); nothing when there are none.
 */
export function renderParts(container, parts, before = null) {
  const shown = [];
  for (const part of parts ?? []) {
    if (part?.type === 'file' && typeof part.url === 'string') {
      shown.push({ url: part.url, mediaType: String(part.mediaType ?? ''), filename: part.filename, bytes: dataUrlBytes(part.url) });
    } else if (part?.type === 'file' && typeof part.data === 'string') {
      shown.push({ url: part.data, mediaType: String(part.mediaType ?? ''), filename: part.filename, bytes: dataUrlBytes(part.data) });
    } else if (part?.type === 'image' && typeof part.image === 'string') {
      shown.push({ url: part.image, mediaType: String(part.mediaType ?? 'image/*'), filename: part.filename, bytes: dataUrlBytes(part.image) });
    }
  }
  if (!shown.length) return null;
  const list = el('div', 'attachments');
  list.append(...shown.map(preview));
  container.insertBefore(list, before);
  return list;
}

/** The attachment parts of a stored UI message, as input parts to send it again. */
export function inputPartsOf(parts) {
  const out = [];
  for (const part of parts ?? []) {
    if (part?.type !== 'file' || typeof part.url !== 'string') continue;
    const mediaType = String(part.mediaType ?? '');
    const filename = typeof part.filename === 'string' ? part.filename : undefined;
    if (mediaType.startsWith('image/')) out.push({ type: 'image', image: part.url, mediaType, ...(filename ? { filename } : {}) });
    else out.push({ type: 'file', data: part.url, mediaType, ...(filename ? { filename } : {}) });
  }
  return out;
}

/**
 * The composer's attachments: `button` opens the file picker (`picker`, an `<input type=file>`),
 * `input` takes pasted files, `dropZone` dropped ones; previews go in `tray`. `onChange()` runs
 * when the list changes; `notice(text)` shows why a file was refused.
 */
export function initComposerAttachments({ button, picker, input, dropZone, tray, onChange = () => {}, notice = () => {} }) {
  let pending = []; // { id, url, mediaType, filename, bytes }
  let nextId = 0;

  async function add(files) {
    for (const file of files) {
      if (pending.length >= MAX_FILES) {
        notice(`At most ${MAX_FILES} attachments per message.`);
        break;
      }
      if (file.size > MAX_BYTES) {
        notice(`“${file.name}” is larger than ${formatBytes(MAX_BYTES)}: not attached.`);
        continue;
      }
      let url;
      try {
        url = await readAsDataUrl(file);
      } catch (err) {
        notice(`Could not read “${file.name}”: ${err?.message ?? err}`);
        continue;
      }
      const mediaType = file.type || 'application/octet-stream';
      // A pasted screenshot has a generic name: keep it, it says what it is.
      pending.push({ id: nextId++, url, mediaType, filename: file.name || 'pasted', bytes: file.size });
    }
    draw();
  }

  function draw() {
    tray.hidden = pending.length === 0;
    tray.replaceChildren(
      ...pending.map((a) => {
        const box = preview(a);
        const remove = el('button', 'attachment-remove', '×');
        remove.type = 'button';
        remove.title = `Remove ${a.filename}`;
        remove.setAttribute('aria-label', `Remove ${a.filename}`);
        remove.addEventListener('click', () => {
          pending = pending.filter((p) => p.id !== a.id);
          draw();
          input.focus();
        });
        box.append(remove);
        return box;
      }),
    );
    onChange();
  }

  button.addEventListener('click', () => picker.click());
  picker.addEventListener('change', () => {
    const files = [...(picker.files ?? [])];
    picker.value = '';
    add(files).then(() => input.focus());
  });
  input.addEventListener('paste', (event) => {
    const files = [...(event.clipboardData?.files ?? [])];
    if (!files.length) return; // text paste: as usual
    event.preventDefault();
    add(files);
  });
  const hasFiles = (event) => [...(event.dataTransfer?.types ?? [])].includes('Files');
  dropZone.addEventListener('dragover', (event) => {
    if (!hasFiles(event)) return;
    event.preventDefault();
    event.dataTransfer.dropEffect = 'copy';
    dropZone.classList.add('dragging');
  });
  dropZone.addEventListener('dragleave', (event) => {
    if (!dropZone.contains(event.relatedTarget)) dropZone.classList.remove('dragging');
  });
  dropZone.addEventListener('drop', (event) => {
    dropZone.classList.remove('dragging');
    if (!hasFiles(event)) return;
    event.preventDefault();
    add([...event.dataTransfer.files]);
  });

  return {
    get count() {
      return pending.length;
    },
    /** The pending attachments as message parts; the tray empties. */
    take() {
      const parts = pending.map(({ url, mediaType, filename }) =>
        mediaType.startsWith('image/') ? { type: 'image', image: url, mediaType, filename } : { type: 'file', data: url, mediaType, filename },
      );
      pending = [];
      draw();
      return parts;
    },
  };
}
