// tutti-netdelay: the link delay and jitter of the namespace harness
// (scripts/netns_cluster.sh), for kernels without netem. In each network
// namespace it serves, an iptables rule sends the outgoing packets to
// netfilter queue N (`-j NFQUEUE --queue-num N`); this one process binds
// queue N in every namespace, holds each packet as that namespace's
// LinkDelay says, then lets it go on. One process for all of them, so that
// releasing a packet costs no context switch to a process of its own.
//
//   tutti-netdelay --queue N --links FILE [--seed S]
//
// FILE: a line per namespace, "NETNS DELAY_US JITTER_US" (NETNS as `ip
// netns` names it). SIGHUP re-reads the delays (the namespaces stay those
// read at start).
#include <arpa/inet.h>
#include <fcntl.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <linux/netfilter.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tutti/netdelay/link_delay.h"

namespace {

// Packets due within this of each other leave together.
constexpr tutti::Duration kSlack = 20'000;  // ns

volatile sig_atomic_t reload = 0;
volatile sig_atomic_t stop = 0;

tutti::Time Now() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<tutti::Time>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// One namespace's queue and the packets it holds.
struct Link {
  std::string netns;
  tutti::LinkDelay delay{0, 0, 1};
  std::deque<std::pair<tutti::Time, uint32_t>> held;  // (release, packet id), in release order
  nfq_handle* handle = nullptr;
  nfq_q_handle* queue = nullptr;
  int fd = -1;
};

int OnPacket(nfq_q_handle*, nfgenmsg*, nfq_data* data, void* arg) {
  auto* link = static_cast<Link*>(arg);
  const nfqnl_msg_packet_hdr* header = nfq_get_msg_packet_hdr(data);
  if (header != nullptr) link->held.emplace_back(link->delay.Release(Now()), ntohl(header->packet_id));
  return 0;
}

// "NETNS DELAY_US JITTER_US" lines.
std::map<std::string, std::pair<double, double>> ReadLinks(const std::string& path) {
  std::map<std::string, std::pair<double, double>> links;
  std::ifstream in(path);
  std::string netns;
  double delay_us = 0, jitter_us = 0;
  while (in >> netns >> delay_us >> jitter_us) {
    if (delay_us < 0 || jitter_us < 0) {
      std::fprintf(stderr, "tutti-netdelay: %s: %s: negative delay or jitter\n", path.c_str(), netns.c_str());
      continue;
    }
    links[netns] = {delay_us, jitter_us};
  }
  return links;
}

// Binds queue `number` inside `link.netns`; false with a message if it cannot.
bool Bind(Link& link, int number, int home) {
  const int ns = open(("/run/netns/" + link.netns).c_str(), O_RDONLY | O_CLOEXEC);
  if (ns < 0 || setns(ns, CLONE_NEWNET) != 0) {
    std::fprintf(stderr, "tutti-netdelay: cannot enter network namespace %s: %s\n", link.netns.c_str(),
                 std::strerror(errno));
    if (ns >= 0) close(ns);
    return false;
  }
  close(ns);
  link.handle = nfq_open();  // its socket belongs to this namespace for good
  setns(home, CLONE_NEWNET);
  if (link.handle == nullptr) {
    std::perror("tutti-netdelay: nfq_open");
    return false;
  }
  link.queue = nfq_create_queue(link.handle, static_cast<uint16_t>(number), &OnPacket, &link);
  if (link.queue == nullptr) {
    std::fprintf(stderr, "tutti-netdelay: %s: cannot bind queue %d (another listener?)\n", link.netns.c_str(),
                 number);
    return false;
  }
  // Only the packet's id is needed: the verdict keeps the packet in the kernel.
  nfq_set_mode(link.queue, NFQNL_COPY_META, 0);
  // A GSO packet (a TCP send of many segments, which veth carries whole)
  // is held as one, not cut into its segments first: the same bytes leave
  // at the same time, for a fraction of the messages.
  nfq_set_queue_flags(link.queue, NFQA_CFG_F_GSO, NFQA_CFG_F_GSO);
  nfq_set_queue_maxlen(link.queue, 65536);
  link.fd = nfq_fd(link.handle);
  int big = 8 << 20;
  setsockopt(link.fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big));
  fcntl(link.fd, F_SETFL, fcntl(link.fd, F_GETFL) | O_NONBLOCK);
  return true;
}

void Apply(const std::map<std::string, std::pair<double, double>>& links, std::vector<std::unique_ptr<Link>>& all) {
  for (auto& link : all) {
    const auto it = links.find(link->netns);
    if (it == links.end()) continue;
    link->delay.Set(tutti::Micros(it->second.first), tutti::Micros(it->second.second));
    std::fprintf(stderr, "tutti-netdelay: %s: delay %.0f us, jitter %.0f us\n", link->netns.c_str(),
                 it->second.first, it->second.second);
  }
}

[[noreturn]] void Usage() {
  std::fprintf(stderr,
               "usage: tutti-netdelay --queue N --links FILE [--seed S]\n"
               "Holds each packet of netfilter queue N, in every network namespace FILE names\n"
               "(a line each: NETNS DELAY_US JITTER_US), for DELAY ± JITTER µs (uniform), in order;\n"
               "SIGHUP re-reads the delays.\n");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  int number = -1;
  uint64_t seed = 1;
  std::string path;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h" || i + 1 >= argc) Usage();
    const char* value = argv[++i];
    if (flag == "--queue") number = std::atoi(value);
    else if (flag == "--links") path = value;
    else if (flag == "--seed") seed = std::strtoull(value, nullptr, 10);
    else Usage();
  }
  if (number < 0 || number > 65535 || path.empty()) Usage();
  const std::map<std::string, std::pair<double, double>> links = ReadLinks(path);
  if (links.empty()) {
    std::fprintf(stderr, "tutti-netdelay: %s names no namespace\n", path.c_str());
    return 2;
  }
  const int home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
  std::vector<std::unique_ptr<Link>> all;
  for (const auto& [netns, delay] : links) {
    auto link = std::make_unique<Link>();
    link->netns = netns;
    link->delay = tutti::LinkDelay(0, 0, seed + all.size());
    if (!Bind(*link, number, home)) return 1;
    all.push_back(std::move(link));
  }
  Apply(links, all);
  struct sigaction hup{};
  hup.sa_handler = [](int) { reload = 1; };
  sigaction(SIGHUP, &hup, nullptr);
  struct sigaction term{};
  term.sa_handler = [](int) { stop = 1; };
  sigaction(SIGTERM, &term, nullptr);
  sigaction(SIGINT, &term, nullptr);

  std::vector<pollfd> fds;
  for (const auto& link : all) fds.push_back({link->fd, POLLIN, 0});
  // Messages carry a packet's metadata only (NFQNL_COPY_META): a few
  // hundred bytes each.
  constexpr int kBatch = 64;
  std::vector<std::array<char, 4096>> bufs(kBatch);
  std::vector<iovec> iovs(kBatch);
  std::vector<mmsghdr> messages(kBatch);
  for (int i = 0; i < kBatch; ++i) {
    iovs[i] = {bufs[i].data(), bufs[i].size()};
    messages[i].msg_hdr = {};
    messages[i].msg_hdr.msg_iov = &iovs[i];
    messages[i].msg_hdr.msg_iovlen = 1;
  }
  while (!stop) {
    if (reload) {
      reload = 0;
      Apply(ReadLinks(path), all);
    }
    // Sleep until the next release or the next packet (or 100 ms: signals).
    tutti::Time next = Now() + 100'000'000;
    for (const auto& link : all) {
      if (!link->held.empty()) next = std::min(next, link->held.front().first);
    }
    const tutti::Duration wait = std::max<tutti::Duration>(0, next - Now());
    timespec ts{static_cast<time_t>(wait / 1'000'000'000), static_cast<long>(wait % 1'000'000'000)};
    if (ppoll(fds.data(), fds.size(), &ts, nullptr) > 0) {
      for (size_t k = 0; k < fds.size(); ++k) {
        if (!(fds[k].revents & POLLIN)) continue;
        // Every packet queued since, up to kBatch a call: one message each.
        for (;;) {
          const int n = recvmmsg(fds[k].fd, messages.data(), kBatch, MSG_DONTWAIT, nullptr);
          if (n <= 0) {
            if (n < 0 && errno == ENOBUFS) {
              std::fprintf(stderr, "tutti-netdelay: %s: queue overrun: packets lost\n", all[k]->netns.c_str());
            }
            break;
          }
          for (int i = 0; i < n; ++i) {
            nfq_handle_packet(all[k]->handle, bufs[i].data(), static_cast<int>(messages[i].msg_len));
          }
          if (n < kBatch) break;
        }
      }
    }
    // Every packet due (within a slack that groups releases into one
    // wake-up) goes on with one batch verdict per queue: ids and releases
    // are both in arrival order.
    const tutti::Time due = Now() + kSlack;
    for (auto& link : all) {
      uint32_t last = 0;
      bool any = false;
      while (!link->held.empty() && link->held.front().first <= due) {
        last = link->held.front().second;
        any = true;
        link->held.pop_front();
      }
      if (any) nfq_set_verdict_batch(link->queue, last, NF_ACCEPT);
    }
  }
  // Whatever is held goes on: stopping the delay does not drop packets.
  for (auto& link : all) {
    if (!link->held.empty()) nfq_set_verdict_batch(link->queue, link->held.back().second, NF_ACCEPT);
    nfq_destroy_queue(link->queue);
    nfq_close(link->handle);
  }
  return 0;
}
