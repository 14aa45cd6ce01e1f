#!/usr/bin/python3
"""cutfs: a pass-through FUSE file system over a real directory that can lose what was never synced.

A power cut for tests (docs/durability.md, "Power loss"). Every operation passes through to the backing
directory, so reads see every write at once; beside it cutfs remembers, per file (inode), what the file held at
its last fsync/fdatasync (the before-image of each 4 KiB page written since, its synced size, and the writes
since in issue order) and, per directory, the names created, removed and renamed since that directory's last
fsync. On "cut" it refuses every later operation (EIO: the power is off) and rewinds the backing directory to the
synced state plus what the mode keeps:

  all     every unsynced write is lost
  prefix  a random prefix of each file's unsynced writes (in issue order) is kept, the rest lost
  pages   a random subset of each file's unsynced 4 KiB pages is kept (written back out of order)
  torn    all lost except one page per file that is torn: its first 1..7 512-byte sectors new, the rest old

In every mode a create, unlink, mkdir, rmdir or rename is forgotten unless every directory it touched was
fsynced after it (strict POSIX: a file's own fsync does not make its name durable). Sectors (512 B) are atomic.

Usage: cutfs.py BACKING MOUNTPOINT CONTROL_SOCKET
Control: connect to the Unix socket, send "cut MODE SEED\n" (reply: one JSON line of what was kept and lost),
"arm MODE SEED N\n" (the power goes off just before the Nth mutating call from now: a write, truncate, fsync or name
operation, so a cut can land inside a commit, between its page writes and its sync; "arm MODE SEED N OP SUFFIX\n":
just before the Nth OP call, e.g. fsync, on a path ending in SUFFIX, e.g. .seg) or "stats\n" (how many
mutating calls so far, whether the power is off, and the figures of an armed cut once it happened). Prints "mounted" on stdout once the kernel has initialised the mount. Unmount with umount/fusermount -u.
"""

import errno
import json
import os
import random
import shutil
import socket
import sys
import threading

from fusepy import FUSE, FuseOSError, Operations

PAGE = 4096
SECTOR = 512
MODES = ('all', 'prefix', 'pages', 'torn')
# The calls that change what a disk would hold; an armed cut counts these.
MUTATING = frozenset(('write', 'truncate', 'fsync', 'fsyncdir', 'create', 'mknod', 'mkdir', 'symlink', 'link',
                      'unlink', 'rmdir', 'rename', 'chmod', 'chown'))


class Dirty:
    """One inode's state since its last fsync: our own descriptor on it, its synced size and page images."""

    def __init__(self, fd, size):
        self.fd = fd  # O_RDWR, opened through /proc/self/fd so it follows the inode across renames and unlinks
        self.synced_size = size
        self.before = {}  # page number -> the page's bytes as last synced (short at the synced end of file)
        self.log = []  # ('w', offset, bytes) | ('t', length), in issue order


class CutFS(Operations):
    """The pass-through operations, plus the volatile layer and the cut."""

    use_ns = True

    def __init__(self, root):
        self.root = os.path.realpath(root)
        self.trash = self.root + '.cutfs-trash'  # unlinked files wait here (same file system) until durable
        shutil.rmtree(self.trash, ignore_errors=True)
        os.mkdir(self.trash)
        self.mutex = threading.Lock()
        self.dirty = {}  # (st_dev, st_ino) -> Dirty
        self.names = []  # pending name operations, oldest first
        self.seq = 0
        self.down = False
        self.ops = 0  # mutating calls since the mount
        self.armed = None  # (op number, mode, seed): cut just before that call
        self.last_cut = None  # the figures of the armed cut, once it happened

    # --- plumbing ---------------------------------------------------------------------------------------------

    def __call__(self, op, *args):
        with self.mutex:
            if self.down and op not in ('release', 'releasedir', 'destroy'):
                raise FuseOSError(errno.EIO)
            if op in MUTATING:
                self.ops += 1
                if self.armed and self._fires(op, args):
                    # The power goes off before this call reaches the disk: the caller sees EIO, as on a dead disk.
                    at, mode, seed = self.armed[:3]
                    self.armed = None
                    self.last_cut = dict(self._cut(mode, seed), atOp=self.ops if at is None else at, op=op)
                    raise FuseOSError(errno.EIO)
            return super().__call__(op, *args)

    def arm(self, mode, seed, n, on=None, suffix=None):
        """Arms a cut just before the nth mutating call from now; with `on` and `suffix`, the nth `on` call (e.g.
        fsync) on a path ending in `suffix` (e.g. .seg): a cut point of a given kind rather than a count."""
        with self.mutex:
            if self.down:
                return {'error': 'the power is already off'}
            if on is None:
                self.armed = (self.ops + max(1, n), mode, seed, None, None, 0)
            else:
                self.armed = (None, mode, seed, on, suffix, max(1, n))
            return {'armedAt': self.armed[0], 'ops': self.ops}

    def _fires(self, op, args):
        """Whether the armed cut lands before this mutating call (called with the mutex held)."""
        at, mode, seed, on, suffix, left = self.armed
        if on is None:
            return self.ops >= at
        if op != on or not args or not isinstance(args[0], str) or not args[0].endswith(suffix):
            return False
        self.armed = (at, mode, seed, on, suffix, left - 1)
        return left - 1 <= 0

    def stats(self):
        """What the control socket reports besides a cut."""
        with self.mutex:
            return {'dirtyFiles': len(self.dirty), 'pendingNames': len(self.names), 'down': self.down, 'ops': self.ops,
                    'lastCut': self.last_cut}

    def _full(self, path):
        return os.path.join(self.root, path.lstrip('/'))

    def _tmp(self):
        self.seq += 1
        return os.path.join(self.trash, str(self.seq))

    def _name_op(self, op, *paths):
        op['dirs'] = {os.path.dirname(p) for p in paths}
        self.names.append(op)

    def _dirty(self, fd):
        st = os.fstat(fd)
        key = (st.st_dev, st.st_ino)
        d = self.dirty.get(key)
        if d is None:
            own = os.open('/proc/self/fd/%d' % fd, os.O_RDWR)
            d = self.dirty[key] = Dirty(own, st.st_size)
        return d

    def _save(self, d, first, last):
        for p in range(first, last + 1):
            if p not in d.before:
                d.before[p] = os.pread(d.fd, PAGE, p * PAGE)

    # --- files ------------------------------------------------------------------------------------------------

    def getattr(self, path, fh=None):
        st = os.lstat(self._full(path))
        keys = ('st_mode', 'st_nlink', 'st_uid', 'st_gid', 'st_size', 'st_atime_ns', 'st_mtime_ns', 'st_ctime_ns', 'st_blocks', 'st_blksize')
        a = {k: getattr(st, k) for k in keys}
        for k in ('st_atime', 'st_mtime', 'st_ctime'):
            a[k] = a.pop(k + '_ns')
        return a

    def access(self, path, amode):
        if not os.access(self._full(path), amode):
            raise FuseOSError(errno.EACCES)

    def chmod(self, path, mode):
        os.chmod(self._full(path), mode)

    def chown(self, path, uid, gid):
        os.chown(self._full(path), uid, gid)

    def utimens(self, path, times=None):
        os.utime(self._full(path), ns=times) if times else os.utime(self._full(path))

    def statfs(self, path):
        s = os.statvfs(self._full(path))
        keys = ('f_bavail', 'f_bfree', 'f_blocks', 'f_bsize', 'f_favail', 'f_ffree', 'f_files', 'f_flag', 'f_frsize', 'f_namemax')
        return {k: getattr(s, k) for k in keys}

    def readlink(self, path):
        return os.readlink(self._full(path))

    def open(self, path, flags):
        # Without O_APPEND: the kernel passes the offset of every write, and pwrite on an O_APPEND fd ignores it.
        return os.open(self._full(path), flags & ~os.O_APPEND)

    def create(self, path, mode, fi=None):
        full = self._full(path)
        existed = os.path.lexists(full)
        fd = os.open(full, os.O_RDWR | os.O_CREAT, mode)
        if not existed:
            self._name_op({'kind': 'create', 'path': full}, full)
        return fd

    def read(self, path, size, offset, fh):
        return os.pread(fh, size, offset)

    def write(self, path, data, offset, fh):
        d = self._dirty(fh)
        if data:
            self._save(d, offset // PAGE, (offset + len(data) - 1) // PAGE)
        d.log.append(('w', offset, bytes(data)))
        return os.pwrite(fh, data, offset)

    def truncate(self, path, length, fh=None):
        fd = fh if fh is not None else os.open(self._full(path), os.O_RDWR)
        try:
            d = self._dirty(fd)
            size = os.fstat(fd).st_size
            if length < size:
                self._save(d, length // PAGE, (size - 1) // PAGE)
            d.log.append(('t', length))
            os.ftruncate(fd, length)
        finally:
            if fh is None:
                os.close(fd)

    def flush(self, path, fh):
        return 0  # close is not a sync

    def release(self, path, fh):
        os.close(fh)

    def fsync(self, path, datasync, fh):
        # The model's disk: once this returns, the inode's data is durable. The backing directory is not synced
        # (it is the model, not the disk under test).
        st = os.fstat(fh)
        d = self.dirty.pop((st.st_dev, st.st_ino), None)
        if d is not None:
            os.close(d.fd)
        return 0

    # --- names ------------------------------------------------------------------------------------------------

    def readdir(self, path, fh):
        return ['.', '..'] + os.listdir(self._full(path))

    def mknod(self, path, mode, dev):
        full = self._full(path)
        os.mknod(full, mode, dev)
        self._name_op({'kind': 'create', 'path': full}, full)

    def mkdir(self, path, mode):
        full = self._full(path)
        os.mkdir(full, mode)
        self._name_op({'kind': 'mkdir', 'path': full}, full)

    def symlink(self, target, source):
        full = self._full(target)
        os.symlink(source, full)
        self._name_op({'kind': 'create', 'path': full}, full)

    def link(self, target, source):
        full = self._full(target)
        os.link(self._full(source), full)
        self._name_op({'kind': 'create', 'path': full}, full)

    def unlink(self, path):
        full = self._full(path)
        keep = self._tmp()
        os.rename(full, keep)
        self._name_op({'kind': 'unlink', 'path': full, 'keep': keep}, full)

    def rmdir(self, path):
        full = self._full(path)
        mode = os.lstat(full).st_mode
        os.rmdir(full)
        self._name_op({'kind': 'rmdir', 'path': full, 'mode': mode}, full)

    def rename(self, old, new):
        src, dst = self._full(old), self._full(new)
        keep = None
        if os.path.lexists(dst) and not os.path.isdir(dst):
            keep = self._tmp()
            os.rename(dst, keep)
        try:
            os.rename(src, dst)
        except OSError:
            if keep:
                os.rename(keep, dst)
            raise
        self._name_op({'kind': 'rename', 'src': src, 'dst': dst, 'keep': keep}, src, dst)

    def fsyncdir(self, path, datasync, fh):
        full = os.path.normpath(self._full(path))
        pending = []
        for op in self.names:
            op['dirs'].discard(full)
            if op['dirs']:
                pending.append(op)
            elif op.get('keep'):
                _remove(op['keep'])
        self.names = pending
        return 0

    # --- the cut ----------------------------------------------------------------------------------------------

    def cut(self, mode, seed):
        """Turns the power off: refuses every later operation and rewinds to what the disk holds."""
        with self.mutex:
            if self.down:
                return {'error': 'the power is already off'}
            return self._cut(mode, seed)

    def _cut(self, mode, seed):
        # Called with the mutex held (from cut, or from __call__ when an armed cut fires).
        rng = random.Random(seed)
        fig = {'mode': mode, 'seed': seed, 'files': 0, 'writes': 0, 'writesKept': 0, 'pages': 0, 'pagesKept': 0,
               'tornPages': 0, 'namesForgotten': 0, 'conflicts': 0}
        self.down = True
        for op in reversed(self.names):
            fig['namesForgotten'] += 1
            if not self._undo(op):
                fig['conflicts'] += 1
        self.names = []
        for d in self.dirty.values():
            fig['files'] += 1
            fig['writes'] += len(d.log)
            fig['pages'] += len(d.before)
            self._rewind(d, mode, rng, fig)
            os.close(d.fd)
        self.dirty = {}
        shutil.rmtree(self.trash, ignore_errors=True)
        os.mkdir(self.trash)
        return fig

    def _undo(self, op):
        k = op['kind']
        try:
            if k == 'create':
                if not os.path.lexists(op['path']):
                    return False
                _remove(op['path'])
            elif k == 'mkdir':
                if not os.path.isdir(op['path']):
                    return False
                shutil.rmtree(op['path'])
            elif k == 'unlink':
                if os.path.lexists(op['path']):
                    return False
                os.rename(op['keep'], op['path'])
            elif k == 'rmdir':
                os.mkdir(op['path'], op['mode'] & 0o7777)
            elif k == 'rename':
                if not os.path.lexists(op['dst']) or os.path.lexists(op['src']):
                    return False
                os.rename(op['dst'], op['src'])
                if op['keep']:
                    os.rename(op['keep'], op['dst'])
        except OSError:
            return False
        return True

    def _rewind(self, d, mode, rng, fig):
        fd, synced = d.fd, d.synced_size
        size = os.fstat(fd).st_size
        current = {p: os.pread(fd, PAGE, p * PAGE) for p in d.before}
        kept = set()
        if mode == 'pages':
            kept = {p for p in sorted(d.before) if rng.random() < 0.5}
        torn = None
        if mode == 'torn' and d.before:
            p = rng.choice(sorted(d.before))
            torn = (p, rng.randint(1, PAGE // SECTOR - 1) * SECTOR)
        # Back to the synced image ...
        for p, old in d.before.items():
            if p not in kept:
                os.pwrite(fd, old, p * PAGE)
        end = synced
        for p in kept:
            end = max(end, min(size, (p + 1) * PAGE))
        os.ftruncate(fd, end)
        fig['pagesKept'] += len(kept)
        # ... plus what the mode keeps.
        if mode == 'prefix':
            n = rng.randint(0, len(d.log))
            fig['writesKept'] += n
            for entry in d.log[:n]:
                if entry[0] == 'w':
                    os.pwrite(fd, entry[2], entry[1])
                else:
                    os.ftruncate(fd, entry[1])
        if torn:
            p, cut = torn
            new = current[p][:cut]
            if new:
                os.pwrite(fd, new, p * PAGE)
                fig['tornPages'] += 1


def _remove(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def serve_control(fs, sock_path):
    """Answers control commands on a Unix socket, one line each."""
    # Bound and listening under a temporary name, then renamed into place: the test connects as soon as the path
    # exists, and a socket bound but not yet listening refuses the connection (ECONNREFUSED).
    tmp = sock_path + '.tmp'
    for p in (sock_path, tmp):
        try:
            os.unlink(p)
        except FileNotFoundError:
            pass
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(tmp)
    srv.listen(4)
    os.rename(tmp, sock_path)
    while True:
        conn, _ = srv.accept()
        with conn:
            f = conn.makefile('rwb')
            for line in f:
                words = line.decode().split()
                try:
                    if words[:1] == ['cut'] and len(words) == 3 and words[1] in MODES:
                        reply = fs.cut(words[1], int(words[2]))
                    elif words[:1] == ['arm'] and len(words) in (4, 6) and words[1] in MODES:
                        reply = fs.arm(words[1], int(words[2]), int(words[3]), *words[4:6])
                    elif words == ['stats']:
                        reply = fs.stats()
                    else:
                        reply = {'error': 'usage: cut all|prefix|pages|torn SEED | arm MODE SEED N [OP SUFFIX] | stats'}
                except Exception as e:  # noqa: BLE001 - reported to the test, which fails on it
                    reply = {'error': repr(e)}
                f.write((json.dumps(reply) + '\n').encode())
                f.flush()


class Mount(CutFS):
    """Announces the mount once the kernel sent FUSE_INIT."""

    def init(self, path):
        sys.stdout.write('mounted\n')
        sys.stdout.flush()


def main():
    if len(sys.argv) != 4:
        sys.exit('usage: cutfs.py BACKING MOUNTPOINT CONTROL_SOCKET')
    backing, mountpoint, control = sys.argv[1:]
    fs = Mount(backing)
    threading.Thread(target=serve_control, args=(fs, control), daemon=True).start()
    # Not direct_io: the page cache stays on, so LMDB's read-only mmap of its data file works.
    FUSE(fs, mountpoint, foreground=True, nothreads=True, big_writes=True, fsname='cutfs', subtype='cutfs')


if __name__ == '__main__':
    main()
