/**
 * Granting a folder from the board: a folder browser served by the host (it starts at the user's
 * home; the page sees folder names, never file contents), then "Grant this folder". The host grants
 * it as `runboard grant` does, refusing a folder that holds Runboard's own state, and the supervisor
 * checks the grant again at every launch.
 */
import { useEffect, useId, useRef, useState } from 'react';
import type { BoardApi } from '../shared/board-api.ts';
import type { FolderListing } from '../shared/board-types.ts';
import { Modal } from './Modal.tsx';

export function FolderPicker({
  api,
  start,
  onClose,
  onGranted,
}: {
  api: BoardApi;
  /** Where to start (default: the user's home). */
  start?: string | undefined;
  onClose: () => void;
  onGranted: (folder: string) => void;
}) {
  const [at, setAt] = useState<string | undefined>(start);
  const [listing, setListing] = useState<FolderListing>();
  const [error, setError] = useState<string>();
  const [typed, setTyped] = useState('');
  const pathId = useId();
  // The person is typing a path, or is in the field (perhaps with its text selected, about to type over
  // it): a listing that arrives meanwhile does not overwrite the field. Setting an input's value moves
  // its caret to the end, so what they type next would be appended to the listing's path.
  const typing = useRef(false);
  const inField = useRef(false);
  const shown = useRef<string | undefined>(undefined);
  // Go (or Enter in the field) asked for a folder: its listing shows its path, focus or not
  const asked = useRef(false);
  const go = (path: string | undefined): void => {
    typing.current = false;
    asked.current = true;
    setAt(path);
  };
  useEffect(() => {
    let live = true;
    api.folders(at ? { path: at } : {}).then(
      (l) => {
        if (!live) return;
        setListing(l);
        shown.current = l.path;
        if (!typing.current && (asked.current || !inField.current)) setTyped(l.path);
        asked.current = false;
        setError(undefined);
      },
      (e: Error) => {
        if (!live) return;
        asked.current = false;
        setError(e.message);
      },
    );
    return () => {
      live = false;
    };
  }, [api, at]);
  const grant = (): void => {
    if (!listing) return;
    api.grantFolder({ path: listing.path }).then(
      (g) => onGranted(g.path),
      (e: Error) => setError(e.message),
    );
  };
  // Electron: the system's own folder dialog (the folder the person picks there is granted by main)
  const native = (): void => {
    api.pickFolder?.().then(
      (folder) => folder && onGranted(folder),
      (e: Error) => setError(e.message),
    );
  };
  return (
    <Modal label="Grant a folder" onClose={onClose} className="folder-picker">
      <p className="muted">
        Runs of a card may read and write only inside folders you grant. Choose the folder, then grant it.
      </p>
      {api.pickFolder && (
        <button type="button" onClick={native}>
          Choose with the system dialog…
        </button>
      )}
      <form
        className="folder-path"
        onSubmit={(e) => {
          e.preventDefault();
          go(typed.trim() || undefined);
        }}
      >
        <label htmlFor={pathId}>Folder</label>
        <input
          id={pathId}
          className="mono"
          value={typed}
          onFocus={() => {
            inField.current = true;
          }}
          onBlur={() => {
            inField.current = false;
            // left without typing: the field shows the folder listed
            if (!typing.current && shown.current !== undefined) setTyped(shown.current);
          }}
          onChange={(e) => {
            typing.current = true;
            setTyped(e.target.value);
          }}
        />
        <button type="submit">Go</button>
      </form>
      {error && (
        <p className="form-error" role="alert">
          {error}
        </p>
      )}
      {listing && (
        <nav aria-label="Folders">
          <ul className="folder-list">
            {listing.parent && (
              <li>
                <button type="button" onClick={() => go(listing.parent)}>
                  ↑ Up to {listing.parent}
                </button>
              </li>
            )}
            {listing.folders.map((f) => (
              <li key={f.path}>
                <button type="button" onClick={() => go(f.path)}>
                  📁 {f.name}
                  {f.granted && <span className="granted"> · granted</span>}
                </button>
              </li>
            ))}
            {listing.folders.length === 0 && <li className="muted">no subfolders</li>}
          </ul>
        </nav>
      )}
      <div className="modal-actions">
        <button type="button" className="primary" onClick={grant} disabled={!listing}>
          Grant {listing ? listing.path : 'this folder'}
        </button>
        <button type="button" onClick={onClose}>
          Cancel
        </button>
      </div>
    </Modal>
  );
}
