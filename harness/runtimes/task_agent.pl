# The generator task contract (harness/runtimes/task.py), run by perl in a container of the tool's own
# image (Debian's perl-base is in every image; python3 and top are not): one task of a run's N.
#
#   env LTH_COORDINATOR=HOST:PORT  LTH_TOKEN=<the run's secret>  LTH_TASK=<task id>  LTH_NODE=<node name>
#
# The task connects to the run's coordinator, says `ready`, receives its index, the bundle (the tool's
# folder, tar) and its own command line (its share of the VUs or rate is already in it), unpacks the bundle,
# says `armed`, then waits for `go`, which the coordinator sends to every task once all N are armed (the
# start barrier). It runs the
# tool in /tmp/lth-task/run (stdout.txt, stderr.txt and the tool's files there), sends a memory and CPU
# sample of the tool's process tree every second (VmRSS and utime+stime from /proc), and at the end the
# exit status and the run folder as a tar. `stop` (or the coordinator gone) ends the tool: TERM, KILL 5 s later.
# With LTH_LOG_RESULTS=1 (the Kubernetes Job sets it) the task also prints its results to its own stdout, the
# pod's log, between marker lines (harness/runtimes/task_results.py reads them back from `kubectl logs`):
#   lth-task-results <index> <parts> <exit> <launched> <ended> <task> <node>   (epoch s, whole: perl-base has no
#   Time::HiRes; the index is the coordinator's, the task the Job's completion index)
#   sample ... (every sample line it sent)
#   files <bytes>   then the run folder as a tar.gz, uuencoded (perl's pack 'u': no module needed)
#   lth-task-results-end <index>
use strict;
use warnings;
use IO::Select;
use IO::Socket::INET;
use POSIX ();

my $WORK = $ENV{LTH_TASK_DIR} || '/tmp/lth-task';    # another folder: tests run two agents on one machine
my ($host, $port) = split /:/, ($ENV{LTH_COORDINATOR} // '');
my $socket;
for (1 .. 60) {
    $socket = IO::Socket::INET->new(PeerAddr => $host, PeerPort => $port, Timeout => 5) and last;
    sleep 1;
}
die "lth-task: the coordinator $ENV{LTH_COORDINATOR} is unreachable: $!\n" unless $socket;
binmode $socket;
$socket->autoflush(1);
print $socket "ready $ENV{LTH_TOKEN} $ENV{LTH_TASK} $ENV{LTH_NODE}\n";

sub line {
    my $line = <$socket>;
    die "lth-task: the coordinator closed the connection\n" unless defined $line;
    chomp $line;
    return $line;
}

sub block {
    my ($name) = @_;
    my $head = line();
    $head =~ /^\Q$name\E (\d+)$/ or die "lth-task: expected $name, got '$head'\n";
    my ($size, $data) = ($1, '');
    while (length($data) < $size) {
        read($socket, $data, $size - length($data), length($data)) or die "lth-task: $name cut short\n";
    }
    return $data;
}

sub uptime {
    open(my $file, '<', '/proc/uptime') or return 0;
    my ($seconds) = split ' ', scalar <$file>;
    return $seconds;
}

# The tool's processes: the pid and its descendants, with their summed VmRSS (KiB) and CPU ticks.
sub tree {
    my ($root) = @_;
    my (%parent, %ticks);
    for my $stat (glob '/proc/[0-9]*/stat') {
        open(my $file, '<', $stat) or next;
        my $text = <$file> // next;
        my ($pid) = $stat =~ m{/proc/(\d+)/};
        my @fields = split ' ', substr($text, rindex($text, ')') + 2);
        ($parent{$pid}, $ticks{$pid}) = ($fields[1], $fields[11] + $fields[12]);
    }
    my @mine = grep { my $p = $_; $p = $parent{$p} while defined $p && $p != $root && $p > 1; defined $p && $p == $root }
               keys %parent;
    my ($rss, $cpu) = (0, 0);
    for my $pid (@mine) {
        $cpu += $ticks{$pid};
        open(my $file, '<', "/proc/$pid/status") or next;
        while (<$file>) { $rss += $1 if /^VmRSS:\s+(\d+)/ }
    }
    return ($rss, $cpu, scalar @mine);
}

my ($index, $parts) = line() =~ /^index (\d+) (\d+)$/ or die "lth-task: no index\n";
my $log_results = ($ENV{LTH_LOG_RESULTS} // '') eq '1';
my @sent_samples;                # kept for the log block
my $bundle = block('bundle');
my @argv = split /\0/, block('argv');
mkdir $_ for $WORK, "$WORK/repo", "$WORK/run";
open(my $untar, '|-', 'tar', '-C', "$WORK/repo", '-xf', '-') or die "lth-task: tar: $!\n";
binmode $untar;
print $untar $bundle;
close $untar or die "lth-task: the bundle did not unpack\n";
mkdir "$WORK/run";
print $socket "armed\n";        # set up: only the fork of the tool is left to do
exit 0 unless line() eq 'go';    # `abort`: another task failed before the barrier

chdir "$WORK/run" or die "lth-task: $WORK/run: $!\n";
my $pid = fork() // die "lth-task: fork: $!\n";
if ($pid == 0) {
    POSIX::setsid();
    open(STDIN, '<', '/dev/null');
    open(STDOUT, '>', 'stdout.txt');
    open(STDERR, '>', 'stderr.txt');
    exec { $argv[0] } @argv or do { print STDERR "lth-task: cannot run $argv[0]: $!\n"; POSIX::_exit(127) };
}
my $launched_at = time();
print $socket "started $pid\n";

my $select = IO::Select->new($socket);
my $tick = POSIX::sysconf(POSIX::_SC_CLK_TCK()) || 100;
my ($t0, $last_t, $last_ticks, $stop_at, $status) = (uptime(), undef, undef, undef, undef);
while (1) {
    if (waitpid($pid, POSIX::WNOHANG()) == $pid) { $status = $?; last }
    my $now = uptime();
    my ($rss, $ticks, $count) = tree($pid);
    my $cpu = defined $last_ticks && $now > $last_t ? 100 * ($ticks - $last_ticks) / $tick / ($now - $last_t) : 0;
    my $sample = sprintf "sample %.2f %d %.1f %d %d\n", $now - $t0, $rss, $cpu < 0 ? 0 : $cpu, $count,
        defined $last_ticks ? 0 : 1;
    print $socket $sample;
    push @sent_samples, $sample if $log_results;
    ($last_t, $last_ticks) = ($now, $ticks);
    if ($select->count && $select->can_read(1)) {
        my $order = <$socket>;
        $select->remove($socket) unless defined $order;
        # the group, or the child itself while it has not called setsid yet (a stop right after `started`)
        if (!defined $order || $order =~ /^stop/) { kill('TERM', -$pid) or kill('TERM', $pid); $stop_at //= uptime() + 5 }
    } elsif (!$select->count) {
        select(undef, undef, undef, 1);
    }
    kill('KILL', -$pid) or kill('KILL', $pid) if defined $stop_at && uptime() > $stop_at;
}
my $code = POSIX::WIFEXITED($status) ? POSIX::WEXITSTATUS($status) : 128 + POSIX::WTERMSIG($status);
log_results($code, time()) if $log_results;
open(my $tar, '-|', 'tar', '-C', "$WORK/run", '-cf', '-', '.') or die "lth-task: tar: $!\n";
binmode $tar;
my $files = do { local $/; <$tar> };
close $tar;
print $socket "exit $code\nfiles " . length($files) . "\n" . $files;
my $bye = <$socket>;    # the coordinator has it all: the container may go
exit 0;

# The results as a block of this task's stdout (the pod's log), for `kubectl logs`.
sub log_results {
    my ($code, $ended_at) = @_;
    open(my $tar, '-|', 'tar', '-C', "$WORK/run", '-czf', '-', '.') or die "lth-task: tar: $!\n";
    binmode $tar;
    my $files = do { local $/; <$tar> };
    close $tar;
    local $| = 1;
    printf STDOUT "lth-task-results %d %d %d %d %d %s %s\n", $index, $parts, $code, $launched_at, $ended_at,
        $ENV{LTH_TASK} || '-', $ENV{LTH_NODE} || '-';
    print STDOUT @sent_samples;
    print STDOUT "files " . length($files) . "\n", pack('u', $files), "lth-task-results-end $index\n";
}
