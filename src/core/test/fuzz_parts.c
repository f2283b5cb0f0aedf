/*
 * fuzz_parts.c — the messages between the coordinator and the parts of a
 * partitioned coverage read as hostile bytes.  For every operation that runs
 * over parts (fill, slope, D8 directions, D8 and multiple-flow
 * accumulation, tg_hydrology), the protocol runs over three parts of the
 * tests' coverage; at every message to a part, every reply and every state
 * the coordinator keeps between its steps, children of the process take the
 * bytes mutated (bits flipped, bytes set, cut short, lengthened, pieces
 * repeated) and run the protocol on from there, FOLLOW_STEPS steps (one in
 * FOLLOW_TO_END to the end) or to its first error.  A child that dies (a
 * signal, or a sanitizer's report under ASan/UBSan) fails the run; every
 * mutated input must end in a status.
 *
 *   fuzz_parts [N]    about N mutated inputs in all (default 100000)
 *   fuzz_parts N SEED MUTATION   only that one (as a FAIL line names it)
 */
#include "tiles.h"

#include <limits.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct fuzz
{
	int			per_point;		/* mutations at each input */
	int			points;			/* inputs seen (counting) */
	long		mutated;
	long		failed;
	long		cut;			/* children stopped still going at step_limit */
	long		followed;		/* children stopped FOLLOW_STEPS after their mutation */
	int			child_stop;		/* a child's last step */
	int			max_step;		/* of the unmutated runs */
	int			step_limit;
	long		statuses[TG_ECALLBACK + 1];	/* how the children's runs ended */
	const char *op_name;
	bool		in_child;
	int			exit_pipe;		/* a child's status to its parent */
	bool		replay;			/* only the mutation below, at the input of this seed */
	uint64_t	replay_seed;
	int			replay_mutation;
} fuzz;

/*
 * A child follows its mutation this many steps on, where what it broke
 * shows; one in FOLLOW_TO_END runs on to the protocol's end.
 */
#define FOLLOW_STEPS 3
#define FOLLOW_TO_END 8

static const char *const kind_names[] = {"message", "reply", "state"};

/* One of the mutations, chosen by the random state, of b (malloc'ed; may be replaced). */
static void
mutate(tg_part_bytes *b)
{
	size_t		n = b->size;
	uint8_t    *d = malloc(n + 64);
	const int	how = (int) (rng_next() % 6);

	if (n)
		memcpy(d, b->data, n);
	switch (how)
	{
		case 0:					/* a few bits flipped */
			for (int k = 1 + (int) (rng_next() % 8); k > 0 && n; k--)
				d[rng_next() % n] ^= (uint8_t) (1u << (rng_next() % 8));
			break;
		case 1:					/* bytes set to edge values */
			for (int k = 1 + (int) (rng_next() % 4); k > 0 && n; k--)
			{
				static const uint8_t edges[] = {0x00, 0xff, 0x7f, 0x80, 0x01, 0xfe};

				d[rng_next() % n] = edges[rng_next() % sizeof edges];
			}
			break;
		case 2:					/* cut short */
			n = n ? (size_t) (rng_next() % n) : 0;
			break;
		case 3:					/* lengthened by random bytes */
			for (int k = 1 + (int) (rng_next() % 64); k > 0; k--)
				d[n++] = (uint8_t) rng_next();
			break;
		case 4:					/* a run of random bytes inside */
			for (size_t at = n ? rng_next() % n : 0, k = 1 + rng_next() % 16; k > 0 && at < n; k--, at++)
				d[at] = (uint8_t) rng_next();
			break;
		default:				/* a piece repeated over what follows it */
			if (n > 2)
			{
				size_t		from = rng_next() % n,
							len = 1 + rng_next() % (n - from),
							to = rng_next() % n;

				memmove(d + to, d + from, len < n - to ? len : n - to);
			}
			break;
	}
	free(b->data);
	b->data = d;
	b->size = n;
}

/* A child at work: what its FAIL line names. */
typedef struct live_child
{
	pid_t		pid;
	int			fd;				/* its end status comes through this pipe */
	const char *op_name;
	parts_bytes_kind kind;
	int			step,
				part,
				mutation;
	uint64_t	seed;
} live_child;

#define MAX_LIVE 16
static live_child live[MAX_LIVE];
static int	nlive,
			max_live = 1;

/* Wait for one child to end and count how. */
static void
reap_one(fuzz *f)
{
	int			status,
				ended = -1,
				k;
	const pid_t pid = waitpid(-1, &status, 0);

	if (pid < 0)
	{
		perror("waitpid");
		exit(2);
	}
	for (k = 0; k < nlive && live[k].pid != pid; k++)
		;
	if (k == nlive)
		return;					/* not one of ours */
	if (read(live[k].fd, &ended, sizeof ended) != sizeof ended)
		ended = -1;
	close(live[k].fd);
	f->mutated++;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && ended == -2)
		f->cut++;
	else if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && ended == -3)
		f->followed++;
	else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || ended < 0)
	{
		f->failed++;
		printf("FAIL %s: the %s of step %d (part %d) mutated (seed %llu, mutation %d): %s %d\n",
			   live[k].op_name, kind_names[live[k].kind], live[k].step, live[k].part,
			   (unsigned long long) live[k].seed, live[k].mutation,
			   WIFSIGNALED(status) ? "killed by signal" : "exit status",
			   WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
	}
	else
		f->statuses[ended <= TG_ECALLBACK ? ended : TG_ECALLBACK]++;
	live[k] = live[--nlive];
}

/*
 * At every input: per_point children, each with the input mutated, run the
 * protocol on from here while the parent goes on with the input as it was;
 * up to max_live children at once (one a core).
 */
static void
at_input(void *arg, int step, parts_bytes_kind kind, int part, tg_part_bytes *b)
{
	fuzz	   *f = arg;
	const uint64_t seed = rng_state;

	if (f->in_child)
	{
		/*
		 * A child mutates once, where it was made.  Rounds that never settle
		 * end at the coordinator's bound of rounds, far beyond what a test
		 * can wait for: a child still going long after the unmutated run
		 * ended stops here, counted apart.
		 */
		if (step > f->step_limit || step > f->child_stop)
		{
			const int	ended = step > f->step_limit ? -2 : -3;

			if (write(f->exit_pipe, &ended, sizeof ended) != sizeof ended)
				_exit(3);
			_exit(0);
		}
		return;
	}
	f->max_step = step > f->max_step ? step : f->max_step;
	f->points++;
	for (int j = 0; j < f->per_point; j++)
	{
		int			fds[2];
		pid_t		pid;

		if (f->replay && (seed != f->replay_seed || j != f->replay_mutation))
			continue;
		while (nlive >= max_live)
			reap_one(f);
		if (pipe(fds) != 0)
		{
			perror("pipe");
			exit(2);
		}
		fflush(stdout);
		pid = fork();
		if (pid < 0)
		{
			perror("fork");
			exit(2);
		}
		if (pid == 0)
		{
			close(fds[0]);
			f->in_child = true;
			f->exit_pipe = fds[1];
			rng_state = seed * 0x9E3779B97F4A7C15ull + (uint64_t) j + 1;
			f->child_stop = j % FOLLOW_TO_END == 0 ? INT_MAX : step + FOLLOW_STEPS;
			mutate(b);
			return;				/* run on; main _exits with the run's status */
		}
		close(fds[1]);
		live[nlive++] = (live_child) {pid, fds[0], f->op_name, kind, step, part, j, seed};
	}
	rng_state = seed + 1;
}

/* The protocol of op over the parts, inputs mutated where f says. */
static void
run_fuzzed(fuzz *f, coverage *parts, const tg_op *op)
{
	static const int order[NPARTS] = {1, 2, 0};
	const parts_tamper tamper = {at_input, f};
	results		r[NPARTS];
	int			rounds[2];
	tg_error	err;
	tg_status	st;

	memset(r, 0, sizeof r);
	st = run_parts(parts, order, NPARTS, op, r, rounds, &tamper, &err);
	for (int k = 0; k < NPARTS; k++)
		res_free(&r[k]);
	if (f->in_child)
	{
		const int	ended = (int) st;

		if (write(f->exit_pipe, &ended, sizeof ended) != sizeof ended)
			_exit(3);
		_exit(0);
	}
	while (nlive > 0)
		reap_one(f);
	if (st != TG_OK)
	{
		printf("FAIL %s: the unmutated protocol failed: %s\n", f->op_name, err.message);
		f->failed++;
	}
}

int
main(int argc, char **argv)
{
	const long	wanted = argc > 1 ? atol(argv[1]) : 100000;
	int16_t    *dem = malloc(sizeof(int16_t) * GW * GH);
	coverage   *tiles = malloc(sizeof(coverage));
	coverage   *parts = malloc(NPARTS * sizeof(coverage));
	struct
	{
		const char *name;
		tg_op		op;
	}			ops[6];
	fuzz		f;
	long		points = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	parts_threads = 1;			/* children run side by side instead, one a core */
	max_live = (int) sysconf(_SC_NPROCESSORS_ONLN);
	max_live = max_live < 1 ? 1 : max_live > MAX_LIVE ? MAX_LIVE : max_live;
	memset(&f, 0, sizeof f);
	if (argc > 3)
	{
		f.replay = true;
		f.replay_seed = strtoull(argv[2], NULL, 10);
		f.replay_mutation = atoi(argv[3]);
	}
	/* hills with a lake (a flat) across the parts' boundaries and pits of a cell or two */
	rng_state = 0x5eed;
	for (int y = 0; y < GH; y++)
		for (int x = 0; x < GW; x++)
		{
			double		v = 200 + 40 * sin(x / 17.0) * cos(y / 23.0) + (x + y) / 9.0;

			if (x > 60 && x < 150 && y > 50 && y < 140)
				v = 150;
			dem[(size_t) y * GW + x] = (int16_t) (v + (rng_next() % 3));
		}
	make_coverage(tiles, dem, true);
	for (int k = 0; k < NPARTS; k++)
		make_part(tiles, k, &parts[k]);
	ops[0].name = "fill";
	ops[0].op = base_op(TG_OP_FILL);
	ops[1].name = "slope";
	ops[1].op = base_op(TG_OP_SLOPE);
	ops[2].name = "d8 directions";
	ops[2].op = base_op(TG_OP_DIRECTIONS);
	ops[3].name = "d8 accumulation";
	ops[3].op = base_op(TG_OP_ACCUMULATION);
	ops[4].name = "mfd-md accumulation";
	ops[4].op = base_op(TG_OP_ACCUMULATION);
	ops[4].op.flow.routing = TG_ROUTE_MFD_MD;
	ops[5].name = "tg_hydrology";
	ops[5].op = base_op(TG_OP_HYDROLOGY);

	/* the inputs of an unmutated run of each, then the mutations spread over them */
	for (int o = 0; o < 6; o++)
	{
		f.op_name = ops[o].name;
		f.per_point = 0;
		run_fuzzed(&f, parts, &ops[o].op);
	}
	points = f.points;
	f.step_limit = 4 * f.max_step + 20;
	f.per_point = (int) ((wanted + points - 1) / (points ? points : 1));
	f.points = 0;
	for (int o = 0; o < 6; o++)
	{
		long		before = f.mutated;

		f.op_name = ops[o].name;
		run_fuzzed(&f, parts, &ops[o].op);
		printf("%s: %ld mutated inputs\n", ops[o].name, f.mutated - before);
	}
	printf("parts fuzzing: %ld mutated messages, replies and states at %ld inputs; ended ok %ld, "
		   "refused as data %ld, invalid %ld, other %ld, followed %d steps without a fault %ld, still going at step %d %ld; "
		   "%ld failed\n",
		   f.mutated, points, f.statuses[TG_OK], f.statuses[TG_EDATA], f.statuses[TG_EINVAL],
		   f.mutated - f.failed - f.cut - f.followed - f.statuses[TG_OK] - f.statuses[TG_EDATA] -
		   f.statuses[TG_EINVAL], FOLLOW_STEPS, f.followed, f.step_limit, f.cut, f.failed);
	for (int t = 0; t < tiles->layout.ntiles; t++)
		free(tiles->tiles[t].bytes);	/* the parts share them */
	free(dem);
	free(tiles);
	free(parts);
	return f.failed == 0 ? 0 : 1;
}
