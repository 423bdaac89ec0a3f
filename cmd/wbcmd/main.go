// Command wbcmd is the serial command-line tool of the device interface: it
// makes one request, or holds one subscription, over a serial port, the
// device's pseudo-terminal or TCP, and prints the answer.
//
//	wbcmd --port <port> --path <path> [--op <operation>] [--opdatatype <type> --opdata <value>]...
//
// See wbcmd --help for the flags and examples.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"senseboard/client"
	"senseboard/profile"
	"senseboard/record"
	"senseboard/resource"
)

// Exit statuses.
const (
	exitOK       = 0
	exitStatus   = 1 // the device answered with an error status
	exitUsage    = 2
	exitNoDevice = 3 // the device could not be reached or did not answer
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// options are wbcmd's parsed flags.
type options struct {
	port       string
	path       string
	op         resource.Op
	params     []resource.Value
	timeout    time.Duration
	count      int
	duration   time.Duration
	compact    bool
	record     string
	listPorts  bool
	completion string
	version    bool
}

// pairs collects --opdatatype and --opdata in command-line order.
type pairs struct {
	items []string // "T:" or "D:" followed by the value
}

func (p *pairs) typ(s string) error  { p.items = append(p.items, "T:"+s); return nil }
func (p *pairs) data(s string) error { p.items = append(p.items, "D:"+s); return nil }

// checkTypeName refuses an --opdatatype that is neither a primitive type
// nor a record: a primitive in the wrong case, or a name that is no record
// of the definitions given a value that is no JSON object. (Apps may add
// records of their own: an object with an unknown name goes to the device.)
func checkTypeName(name, data string) error {
	prims := resource.PrimitiveTypeNames()
	if slices.Contains(prims, name) {
		return nil
	}
	_, records := completionWords()
	if slices.Contains(records, name) {
		return nil
	}
	known := fmt.Sprintf("the types are %s, or a record: %s", strings.Join(prims, ", "), strings.Join(records[len(prims):], ", "))
	for _, p := range prims {
		if strings.EqualFold(p, name) {
			return fmt.Errorf("unknown type %q (did you mean %s?); %s", name, p, known)
		}
	}
	if d := strings.TrimSpace(data); !strings.HasPrefix(d, "{") {
		return fmt.Errorf("unknown type %q; %s", name, known)
	}
	return nil
}

// values pairs the types with the data; --opdata is never split on commas.
func (p *pairs) values() ([]resource.Value, error) {
	var out []resource.Value
	for i := 0; i < len(p.items); i += 2 {
		t := p.items[i]
		if !strings.HasPrefix(t, "T:") {
			return nil, fmt.Errorf("--opdata %q has no --opdatatype before it; give them in pairs: --opdatatype <type> --opdata <value>", t[2:])
		}
		if i+1 >= len(p.items) || !strings.HasPrefix(p.items[i+1], "D:") {
			return nil, fmt.Errorf("--opdatatype %s has no --opdata after it; give them in pairs: --opdatatype <type> --opdata <value>", t[2:])
		}
		if err := checkTypeName(t[2:], p.items[i+1][2:]); err != nil {
			return nil, fmt.Errorf("--opdatatype for pair %d: %w", i/2+1, err)
		}
		v, err := resource.ParseValue(t[2:], p.items[i+1][2:])
		if err != nil {
			return nil, fmt.Errorf("--opdata for pair %d: %w", i/2+1, err)
		}
		out = append(out, v)
	}
	return out, nil
}

func parse(args []string, stdout io.Writer) (*options, error) {
	fs := flag.NewFlagSet("wbcmd", flag.ContinueOnError)
	o := &options{}
	var op string
	var pp pairs
	fs.StringVar(&o.port, "port", "", "the device: a serial port or pseudo-terminal path, TCP<host>:<port>, tcp://<host>:<port>, or TCP<host>:<port>/<serial> on a fleet's port")
	fs.StringVar(&o.path, "path", "", "the resource, for example /Info or /Meas/Acc/104 (case and leading slash do not matter)")
	fs.StringVar(&op, "op", "GET", "the operation: GET, PUT, POST, DELETE or SUBSCRIBE, in any case")
	fs.Func("opdatatype", "type of the next --opdata: int64, int32, uint8, uint16, uint32, float, double, bool, string, or a record name such as AdvSettings", pp.typ)
	fs.Func("opdata", "a value of the type just given; a record's value is a JSON object", pp.data)
	fs.DurationVar(&o.timeout, "timeout", 5*time.Second, "how long to wait for the device to answer")
	fs.IntVar(&o.count, "count", 0, "SUBSCRIBE: stop after this many notifications")
	fs.DurationVar(&o.duration, "duration", 0, "SUBSCRIBE: stop after this long, for example 10s")
	fs.BoolVar(&o.compact, "compact", false, "print envelopes on one line")
	fs.StringVar(&o.record, "record", "", "SUBSCRIBE: also record the notifications to FILE.csv (one file per stream, FILE-<stream>.csv) or FILE.jsonl")
	fs.BoolVar(&o.listPorts, "list-ports", false, "list the serial ports of this computer and the pseudo-terminals of running devices, then exit")
	fs.StringVar(&o.completion, "completion", "", "print a shell completion script: bash or zsh")
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	// The flag package's own messages are left out: -h prints the help, and
	// a flag that cannot be parsed is one line that points to it.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		help(fs, stdout)
		return nil, err
	} else if err != nil {
		return nil, fmt.Errorf("%w; see wbcmd --help", err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (every value follows its flag, for example --path /Info)", fs.Arg(0))
	}
	if o.listPorts || o.completion != "" || o.version {
		return o, nil
	}
	var err error
	if o.op, err = resource.ParseOp(op); err != nil || o.op == resource.Unsubscribe {
		return nil, fmt.Errorf("--op %q: allowed: GET, PUT, POST, DELETE, SUBSCRIBE", op)
	}
	if o.port == "" {
		return nil, errors.New("--port is required: the device's serial port, pseudo-terminal or TCP<host>:<port> (senseboard prints it when it starts)")
	}
	if o.path == "" {
		return nil, errors.New("--path is required: the resource, for example /Info")
	}
	if o.params, err = pp.values(); err != nil {
		return nil, err
	}
	if o.count < 0 || o.duration < 0 {
		return nil, errors.New("--count and --duration take positive values")
	}
	if o.timeout <= 0 {
		return nil, fmt.Errorf("--timeout %v: give a positive duration, such as 5s", o.timeout)
	}
	if o.record != "" {
		if o.op != resource.Subscribe {
			return nil, errors.New("--record works with --op SUBSCRIBE")
		}
		if _, err := record.FormatOf(o.record); err != nil {
			return nil, fmt.Errorf("--record: %w", err)
		}
		if dir := filepath.Dir(o.record); !isDir(dir) {
			return nil, fmt.Errorf("--record %s: there is no directory %s to write it in; give a file in an existing directory", o.record, dir)
		}
	}
	return o, nil
}

// isDir reports whether path is a directory.
func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// help prints the usage to stdout: asked for, it is the command's output.
func help(fs *flag.FlagSet, w io.Writer) {
	fs.SetOutput(w)
	fmt.Fprint(w, `wbcmd makes one request to a device, or holds one subscription, and prints the answer.

Usage:
  wbcmd --port <port> --path <path> [--op <operation>] [--opdatatype <type> --opdata <value>]...

--opdatatype/--opdata pairs are the operation's parameters in the order of its
interface definition: path parameters first, then the body. GET is the default
operation. Envelopes go to stdout; exit status 0 means a 2xx answer, 1 another
status, 2 a usage error, 3 that the device could not be reached.

Examples:
  wbcmd --port TCP127.0.0.1:7809 --path /Info
  wbcmd --port ~/.local/state/senseboard/000123/tty --path /Time --op PUT --opdatatype int64 --opdata 1700000000000000
  wbcmd --port TCP127.0.0.1:7809 --path /Meas/Acc/Config --op PUT --opdatatype AccConfig --opdata '{"GRange": 4}'
  wbcmd --port TCP127.0.0.1:7809 --path /Component/Eeprom/0 --opdatatype uint32 --opdata 0 --opdatatype uint8 --opdata 16
  wbcmd --port TCP127.0.0.1:7809 --path /Meas/Acc/104 --op SUBSCRIBE --count 10
  wbcmd --port TCP127.0.0.1:7900/000124 --path /Info
  wbcmd --list-ports

SUBSCRIBE prints notifications until ESC (when stdin is a terminal), Ctrl-C,
--count or --duration, then unsubscribes.

Flags:
`)
	fs.PrintDefaults()
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o, err := parse(args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintln(stderr, "wbcmd:", err)
		return exitUsage
	}
	switch {
	case o.version:
		fmt.Fprintln(stdout, "wbcmd", profile.Version)
		return exitOK
	case o.completion != "":
		return printCompletion(o.completion, stdout, stderr)
	case o.listPorts:
		return listPorts(stdout, stderr)
	}
	ctx, stop := signalContext()
	defer stop()
	c, err := client.Dial(ctx, o.port, &client.Options{Timeout: o.timeout, Name: "wbcmd " + profile.Version})
	if err != nil {
		fmt.Fprintln(stderr, "wbcmd:", err)
		return exitNoDevice
	}
	defer c.Close()
	if o.op == resource.Subscribe {
		return subscribe(ctx, c, o, stdin, stdout, stderr)
	}
	env, err := c.Do(ctx, o.op, o.path, o.params...)
	if err != nil {
		fmt.Fprintln(stderr, "wbcmd:", err)
		return exitNoDevice
	}
	printEnvelope(stdout, env.Raw, o.compact)
	if !env.OK() {
		return exitStatus
	}
	return exitOK
}
