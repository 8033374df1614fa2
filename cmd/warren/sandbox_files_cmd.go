package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/scheduler"
)

// splitRemote splits "ID:PATH" (ok) from a local path.
func splitRemote(s string) (id, path string, ok bool) {
	id, path, found := strings.Cut(s, ":")
	if !found {
		return "", "", false
	}
	if _, _, err := messages.ParseSandboxID(id); err != nil {
		return "", "", false
	}
	return id, path, true
}

type sandboxCpCmd struct {
	sandboxTokenFlag
	Parents bool   `help:"Create missing parent directories in the sandbox."`
	Src     string `arg:"" help:"LOCAL or ID:PATH."`
	Dst     string `arg:"" help:"ID:PATH or LOCAL."`
}

func (c *sandboxCpCmd) Run(g *globals) error {
	sid, spath, sremote := splitRemote(c.Src)
	did, dpath, dremote := splitRemote(c.Dst)
	switch {
	case sremote == dremote:
		return errors.New("sandbox cp: exactly one side is ID:PATH (warren sandbox cp LOCAL ID:PATH, or cp ID:PATH LOCAL)")
	case dremote:
		f, err := os.Open(c.Src)
		if err != nil {
			return err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return err
		}
		return withSandbox(g, c.sandboxTokenFlag, did, func(sb *scheduler.Sandbox) error {
			n, err := sb.CopyTo(g.Ctx, f, dpath, scheduler.CopyOptions{Mode: st.Mode().Perm(), Parents: c.Parents})
			if err != nil && n > 0 {
				// The chunks before the failed one stay in the sandbox.
				return fmt.Errorf("%d of %d bytes copied to %s, then: %w", n, st.Size(), c.Dst, err)
			}
			return err
		})
	}
	return withSandbox(g, c.sandboxTokenFlag, sid, func(sb *scheduler.Sandbox) error {
		f, err := os.OpenFile(c.Dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		if _, err := sb.CopyFrom(g.Ctx, spath, f, 0, -1); err != nil {
			_ = f.Close()
			return err
		}
		return f.Close()
	})
}

type sandboxLsCmd struct {
	sandboxTokenFlag
	Pool   string `help:"With no argument: only this pool's sandboxes."`
	JSON   bool   `name:"json" help:"One JSON object per line."`
	All    bool   `short:"a" help:"Files: also list names starting with a dot (as ls -a; in the home, .tmp and .shm hold the sandbox's /tmp and /dev/shm)."`
	Target string `arg:"" optional:"" help:"ID[:PATH]: list the sandbox's files; none: list your sandboxes."`
}

func (c *sandboxLsCmd) Run(g *globals) error {
	if c.Target == "" {
		s, client, err := g.sandboxClient()
		if err != nil {
			return err
		}
		defer s.Close()
		list, err := client.ListSessions(g.Ctx, c.Pool)
		if c.JSON {
			enc := json.NewEncoder(g.IO.Out)
			for _, info := range list {
				if err := enc.Encode(info); err != nil {
					return err
				}
			}
			return err
		}
		tw := tabwriter.NewWriter(g.IO.Out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tPOOL\tSTATE\tRUNNING\tEXPIRES")
		for _, i := range list {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", i.ID, i.Pool, i.State, i.Running, i.Expires.Format(time.RFC3339))
		}
		if ferr := tw.Flush(); ferr != nil {
			return ferr
		}
		return err
	}
	id, path, ok := splitRemote(c.Target)
	if !ok {
		id = c.Target
	}
	return withSandbox(g, c.sandboxTokenFlag, id, func(sb *scheduler.Sandbox) error {
		es, err := sb.List(g.Ctx, path)
		if err != nil {
			return err
		}
		if !c.All {
			es = slices.DeleteFunc(es, func(e messages.FileEntry) bool { return strings.HasPrefix(e.Name, ".") })
		}
		return printEntries(g, es, c.JSON)
	})
}

func printEntries(g *globals, es []messages.FileEntry, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(g.IO.Out)
		for _, e := range es {
			if err := enc.Encode(e); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(g.IO.Out, 0, 4, 2, ' ', 0)
	for _, e := range es {
		fmt.Fprintf(tw, "%s\t%04o\t%d\t%s\t%s\n", e.Type, e.Mode, e.Size, e.MTime.Format(time.RFC3339), e.Name)
	}
	return tw.Flush()
}

// remoteArg is a command's ID:PATH argument.
type remoteArg struct {
	sandboxTokenFlag
	Path string `arg:"" help:"ID:PATH."`
}

func (a remoteArg) split() (id, path string, err error) {
	id, path, ok := splitRemote(a.Path)
	if !ok {
		return "", "", fmt.Errorf("%q is not ID:PATH", a.Path)
	}
	return id, path, nil
}

func (a remoteArg) do(g *globals, fn func(sb *scheduler.Sandbox, path string) error) error {
	id, path, err := a.split()
	if err != nil {
		return err
	}
	return withSandbox(g, a.sandboxTokenFlag, id, func(sb *scheduler.Sandbox) error { return fn(sb, path) })
}

type sandboxStatCmd struct {
	remoteArg
}

func (c *sandboxStatCmd) Run(g *globals) error {
	return c.do(g, func(sb *scheduler.Sandbox, path string) error {
		e, err := sb.Stat(g.Ctx, path)
		if err != nil {
			return err
		}
		return json.NewEncoder(g.IO.Out).Encode(e)
	})
}

type sandboxMkdirCmd struct {
	remoteArg
}

func (c *sandboxMkdirCmd) Run(g *globals) error {
	return c.do(g, func(sb *scheduler.Sandbox, path string) error { return sb.Mkdir(g.Ctx, path) })
}

type sandboxRmCmd struct {
	sandboxTokenFlag
	Recursive bool   `short:"r" help:"Remove a directory with its contents."`
	Target    string `arg:"" help:"ID: end the sandbox; ID:PATH: remove a file or directory in it."`
}

func (c *sandboxRmCmd) Run(g *globals) error {
	id, path, remote := splitRemote(c.Target)
	if !remote {
		return withSandbox(g, c.sandboxTokenFlag, c.Target, func(sb *scheduler.Sandbox) error {
			if err := sb.Delete(g.Ctx); err != nil {
				return err
			}
			return removeSandbox(g, c.Target)
		})
	}
	return withSandbox(g, c.sandboxTokenFlag, id, func(sb *scheduler.Sandbox) error { return sb.Remove(g.Ctx, path, c.Recursive) })
}
