# An unseen job: on-policy reinforcement learning (PPO) under DDP, no DataLoader. Each step every
# rank rolls its policy out in ENVS copies of a toy environment written in Python (a cart on a
# track balancing a pole, integrated with a few Euler substeps per action; episodes end at
# random lengths and restart), ROLLOUT actions per copy, the policy and value network's forward
# run action by action without gradients; then generalized advantage estimates in numpy, and
# two epochs of two minibatches of clipped-ratio updates through DDP (four all-reduces of the
# gradients a step), Adam, gradient clipping; every 10 steps the ranks all-reduce their mean
# return for rank 0's print. 4-6 ranks.
# Faults (env FAULT=kind:arg, two joined by '+'; from step FROM):
#   quota2:PCT    rank 2 moves itself into a cgroup with a CPU quota of PCT % of a core
#   slowenv1:K    rank 1's environment integrates K times as many substeps (its own Python)
#   envall:K      every rank's environment does
#   longroll3:F   rank 3 rolls out F times as many actions (more data in its update too)
#   gcall:N       every rank builds N reference cycles a step and collects them
#   render0:K     rank 0 renders K frames of its first environment in Python every step (a video log)
import gc, math, os, random, time
import numpy as np
import torch, torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

FAULTS = [f.split(":") for f in os.environ.get("FAULT", "none").split("+")]
FROM = int(os.environ.get("FROM", "120"))
STEPS = int(os.environ.get("STEPS", "200"))
ENVS = int(os.environ.get("ENVS", "8"))
ROLLOUT = int(os.environ.get("ROLLOUT", "32"))
OUT = os.environ.get("OUT", "/tmp/novel21")
rank = int(os.environ["RANK"]); world = int(os.environ["WORLD_SIZE"])
torch.set_num_threads(1)
torch.manual_seed(3)
rng = random.Random(100 + rank)


def on(kind, r, step):
    for f in FAULTS:
        if f[0] == kind and (r is None or rank == r) and step >= FROM:
            return float(f[1])
    return None


class CartPole:
    """x, x', theta, theta'; a push left or right each action, SUBSTEPS Euler steps per action."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.s = [rng.uniform(-0.05, 0.05) for _ in range(4)]
        self.t = 0
        self.limit = rng.randint(40, 160)  # episodes end at random lengths too

    def step(self, action, substeps):
        x, v, th, w = self.s
        force = 10.0 if action else -10.0
        dt = 0.02 / substeps
        for _ in range(substeps):
            c, s = math.cos(th), math.sin(th)
            tmp = (force + 0.05 * w * w * s) / 1.1
            acc_th = (9.8 * s - c * tmp) / (0.5 * (4.0 / 3.0 - 0.1 * c * c / 1.1))
            acc_x = tmp - 0.05 * acc_th * c / 1.1
            x, v, th, w = x + dt * v, v + dt * acc_x, th + dt * w, w + dt * acc_th
        self.s = [x, v, th, w]
        self.t += 1
        done = abs(x) > 2.4 or abs(th) > 0.21 or self.t >= self.limit
        return (0.0 if done and self.t < self.limit else 1.0), done


class ActorCritic(nn.Module):
    def __init__(self, hidden=128):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())
        self.pi = nn.Linear(hidden, 2)
        self.v = nn.Linear(hidden, 1)

    def forward(self, obs):
        h = self.body(obs)
        return self.pi(h), self.v(h).squeeze(-1)


def rollout(model, envs, length, substeps):
    obs, acts, logps, rews, dones, vals = [], [], [], [], [], []
    with torch.no_grad():
        for _ in range(length):
            o = torch.tensor([e.s for e in envs], dtype=torch.float32)
            logits, v = model(o)
            dist_ = torch.distributions.Categorical(logits=logits)
            a = dist_.sample()
            obs.append(o); acts.append(a); logps.append(dist_.log_prob(a)); vals.append(v)
            r_t, d_t = [], []
            for e, ai in zip(envs, a.tolist()):
                r, d = e.step(ai, substeps)
                if d:
                    e.reset()
                r_t.append(r); d_t.append(d)
            rews.append(r_t); dones.append(d_t)
        _, last_v = model(torch.tensor([e.s for e in envs], dtype=torch.float32))
    return obs, acts, logps, np.array(rews, np.float32), np.array(dones, np.float32), vals, last_v


def advantages(rews, dones, vals, last_v, gamma=0.99, lam=0.95):
    vals = np.stack([v.numpy() for v in vals] + [last_v.numpy()])
    adv = np.zeros_like(rews)
    gae = np.zeros(rews.shape[1], np.float32)
    for t in reversed(range(len(rews))):
        nonterm = 1.0 - dones[t]
        delta = rews[t] + gamma * vals[t + 1] * nonterm - vals[t]
        gae = delta + gamma * lam * nonterm * gae
        adv[t] = gae
    return adv, adv + vals[:-1]


def throttle_self(pct):
    path = f"/sys/fs/cgroup/cpu/novel21-{os.getpid()}"
    os.makedirs(path, exist_ok=True)
    open(f"{path}/cpu.cfs_period_us", "w").write("100000\n")
    open(f"{path}/cpu.cfs_quota_us", "w").write(f"{int(1000 * pct)}\n")
    open(f"{path}/cgroup.procs", "w").write(f"{os.getpid()}\n")


class Node:
    def __init__(self):
        self.peer = None
        self.payload = [0] * 4


def make_cycles(n):
    for _ in range(n):
        a, b = Node(), Node()
        a.peer, b.peer = b, a
    gc.collect()


def render(env, frames, side=32):
    """Frames of the cart and pole as nested lists (a video logger's), drawn pixel by pixel."""
    out = []
    x, _, th, _ = env.s
    for k in range(frames):
        img = [[0] * side for _ in range(side)]
        cx = int((x / 4.8 + 0.5) * (side - 1))
        for i in range(side):
            for j in range(side):
                if abs(j - cx) < 3 and side - 6 < i < side - 2:
                    img[i][j] = 255
                elif abs((j - cx) * math.cos(th) + (side - 6 - i) * math.sin(th)) < 1 and i < side - 6:
                    img[i][j] = 128
        out.append(img)
    return out


def main():
    dist.init_process_group("gloo")
    model = DDP(ActorCritic())
    opt = torch.optim.Adam(model.parameters(), lr=3e-4)
    envs = [CartPole() for _ in range(ENVS)]
    t0 = time.time()
    returns = []
    for step in range(STEPS + 1):
        q = on("quota2", 2, step)
        if q and step == FROM:
            throttle_self(q)
        substeps = int(2 * ((on("slowenv1", 1, step) or 1) * (on("envall", None, step) or 1)))
        length = int(ROLLOUT * (on("longroll3", 3, step) or 1))
        obs, acts, logps, rews, dones, vals, last_v = rollout(model.module, envs, length, substeps)
        adv, ret = advantages(rews, dones, vals, last_v)
        returns.append(float(rews.sum()) / ENVS)
        obs, acts, logps = torch.cat(obs), torch.cat(acts), torch.cat(logps)
        adv_t = torch.from_numpy(adv.reshape(-1)); ret_t = torch.from_numpy(ret.reshape(-1))
        adv_t = (adv_t - adv_t.mean()) / (adv_t.std() + 1e-8)
        n = len(obs)
        for _ in range(2):
            perm = torch.randperm(n)
            for mb in perm.chunk(2):
                logits, v = model(obs[mb])
                d = torch.distributions.Categorical(logits=logits)
                ratio = torch.exp(d.log_prob(acts[mb]) - logps[mb])
                pg = -torch.min(ratio * adv_t[mb], ratio.clamp(0.8, 1.2) * adv_t[mb]).mean()
                loss = pg + 0.5 * (v - ret_t[mb]).pow(2).mean() - 0.01 * d.entropy().mean()
                opt.zero_grad(set_to_none=True)
                loss.backward()
                nn.utils.clip_grad_norm_(model.parameters(), 0.5)
                opt.step()
        k = on("gcall", None, step)
        if k:
            make_cycles(int(k))
        k = on("render0", 0, step)
        if k:
            render(envs[0], int(k))
        if step % 10 == 0:
            shown = torch.tensor([sum(returns[-10:]) / len(returns[-10:])])
            dist.all_reduce(shown)
            if rank == 0:
                print(f"step {step} return {float(shown) / world:.1f} {time.time() - t0:.1f}s", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
