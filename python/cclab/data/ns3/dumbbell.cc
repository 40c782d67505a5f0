// cclab's ns-3 dumbbell for `cclab bench --vs-ns3` (docs/performance.md): the
// same scenario as a cclab bench case, run by ns-3 (the `ns3` wheel's
// headers and libraries). Built on first use by cclab/ns3bench.py.
//
// N senders, each on its own node with its own congestion control, reach
// one router over 10 Gbit/s access links with no delay; the router's
// bottleneck link (rate, one-way delay RTT/2, a drop-tail device queue of
// `buffer` packets, no queue discipline) leads to a second router and the
// receivers. Each sender runs a BulkSend application (unlimited data) from
// t = 0; segments of 1448 bytes, TCP timestamps (52 header bytes: 1500-byte
// packets, as cclab), SACK, delayed ACK every 2 segments, minimum RTO 200 ms
// (Linux's). At the end it prints one line: packets that left the
// bottleneck, bytes the receivers got, and the simulated seconds.
#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <cstdio>

using namespace ns3;

static uint64_t g_departed = 0;

static void
OnBottleneckTx(Ptr<const Packet>)
{
    ++g_departed;
}

int
main(int argc, char* argv[])
{
    uint32_t cubic = 1;
    uint32_t bbr = 0;
    std::string rate = "100Mbps";
    double rttMs = 25.0;
    double seconds = 60.0;
    uint32_t bufferPackets = 0; // 0: one BDP
    CommandLine cmd(__FILE__);
    cmd.AddValue("cubic", "CUBIC flows", cubic);
    cmd.AddValue("bbr", "BBR flows", bbr);
    cmd.AddValue("rate", "bottleneck rate", rate);
    cmd.AddValue("rtt", "base RTT in ms", rttMs);
    cmd.AddValue("duration", "simulated seconds", seconds);
    cmd.AddValue("buffer", "bottleneck buffer in packets (0: one BDP)", bufferPackets);
    cmd.Parse(argc, argv);

    const uint32_t n = cubic + bbr;
    const double rateBps = DataRate(rate).GetBitRate();
    if (bufferPackets == 0)
    {
        bufferPackets = std::max<uint32_t>(1, uint32_t(rateBps * rttMs / 1e3 / 8 / 1500 + 0.5));
    }
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(1448));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(64 << 20));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(64 << 20));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(2));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MilliSeconds(200)));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(true));

    NodeContainer senders(n);
    NodeContainer receivers(n);
    NodeContainer routers(2);
    InternetStackHelper stack;
    stack.InstallAll();

    PointToPointHelper access;
    access.SetDeviceAttribute("DataRate", StringValue("10Gbps"));
    access.SetChannelAttribute("Delay", TimeValue(Seconds(0)));
    PointToPointHelper bottleneck;
    bottleneck.SetDeviceAttribute("DataRate", StringValue(rate));
    bottleneck.SetChannelAttribute("Delay", TimeValue(MicroSeconds(uint64_t(rttMs * 500))));
    bottleneck.SetQueue("ns3::DropTailQueue<Packet>",
                        "MaxSize",
                        QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, bufferPackets)));

    TrafficControlHelper tch; // no queue discipline: the device queue is the buffer
    Ipv4AddressHelper addr;
    NetDeviceContainer core = bottleneck.Install(routers.Get(0), routers.Get(1));
    addr.SetBase("10.0.0.0", "255.255.255.0");
    addr.Assign(core); // (installs ns-3's default queue discipline, removed here)
    tch.Uninstall(core);
    core.Get(0)->TraceConnectWithoutContext("PhyTxEnd", MakeCallback(&OnBottleneckTx));

    std::vector<Ipv4Address> sinkAddr;
    for (uint32_t i = 0; i < n; ++i)
    {
        NetDeviceContainer a = access.Install(senders.Get(i), routers.Get(0));
        NetDeviceContainer b = access.Install(routers.Get(1), receivers.Get(i));
        char base[32];
        std::snprintf(base, sizeof base, "10.1.%u.0", i);
        addr.SetBase(base, "255.255.255.0");
        addr.Assign(a);
        std::snprintf(base, sizeof base, "10.2.%u.0", i);
        addr.SetBase(base, "255.255.255.0");
        sinkAddr.push_back(addr.Assign(b).GetAddress(1));
        tch.Uninstall(a);
        tch.Uninstall(b);
    }
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    const uint16_t port = 5201;
    ApplicationContainer sinks;
    for (uint32_t i = 0; i < n; ++i)
    {
        const char* cc = i < bbr ? "ns3::TcpBbr" : "ns3::TcpCubic";
        Config::Set("/NodeList/" + std::to_string(senders.Get(i)->GetId()) +
                        "/$ns3::TcpL4Protocol/SocketType",
                    TypeIdValue(TypeId::LookupByName(cc)));
        BulkSendHelper send("ns3::TcpSocketFactory", InetSocketAddress(sinkAddr[i], port));
        send.SetAttribute("MaxBytes", UintegerValue(0));
        send.SetAttribute("SendSize", UintegerValue(1448 * 16));
        send.Install(senders.Get(i)).Start(Seconds(0));
        PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), port));
        sinks.Add(sink.Install(receivers.Get(i)));
    }
    sinks.Start(Seconds(0));

    Simulator::Stop(Seconds(seconds));
    Simulator::Run();
    uint64_t rx = 0;
    for (uint32_t i = 0; i < sinks.GetN(); ++i)
    {
        rx += DynamicCast<PacketSink>(sinks.Get(i))->GetTotalRx();
    }
    Simulator::Destroy();
    std::printf("{\"departed_packets\": %llu, \"received_bytes\": %llu, \"simulated_s\": %g, "
                "\"buffer_packets\": %u}\n",
                (unsigned long long)g_departed,
                (unsigned long long)rx,
                seconds,
                bufferPackets);
    return 0;
}
