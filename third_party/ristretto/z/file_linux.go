/*
 * SPDX-FileCopyrightText: © Hypermode Inc. <hello@hypermode.com>
 * SPDX-License-Identifier: Apache-2.0
 */

package z

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Truncate would truncate the mmapped file to the given size. On Linux, we truncate
// the underlying file and then call mremap, but on other systems, we unmap first,
// then truncate, then re-map.
func (m *MmapFile) Truncate(maxSz int64) error {
	if err := m.Sync(); err != nil {
		return fmt.Errorf("while sync file: %s, error: %v\n", m.Fd.Name(), err)
	}
	if err := m.Fd.Truncate(maxSz); err != nil {
		return fmt.Errorf("while truncate file: %s, error: %v\n", m.Fd.Name(), err)
	}
	// orcr: a file that grows gets its new blocks now, not at a page fault (see
	// OpenMmapFileUsing).
	if old := int64(len(m.Data)); maxSz > old {
		if err := allocate(m.Fd, old, maxSz-old); err != nil {
			m.Fd.Truncate(old)
			return fmt.Errorf("while allocating file: %s, error: %w", m.Fd.Name(), err)
		}
	}

	var err error
	m.Data, err = mremap(m.Data, int(maxSz)) // Mmap up to max size.
	return err
}

// allocate gives the file's range [off, off+n) its blocks (fallocate mode 0). A file
// system that cannot preallocate keeps the file sparse, as before.
func allocate(fd *os.File, off, n int64) error {
	for {
		err := unix.Fallocate(int(fd.Fd()), 0, off, n)
		switch err {
		case nil, unix.EOPNOTSUPP:
			return nil
		case unix.EINTR:
			continue
		}
		return err
	}
}
