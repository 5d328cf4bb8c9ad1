// The counters a port's device keeps (rte_eth_stats), as a family of dataplane/counters.h: X(field,
// metric, label, unit, column, help, rte_eth_stats member).
#pragma once

#include "dataplane/counters.h"

namespace dscpgw {

#define DSCPGW_DEVICE_COUNTERS(X)                                                         \
    X(device_rx_packets, "port_rx_packets_total", "", "packets", "",                      \
      "Packets the device received (ethdev ipackets).", ipackets)                         \
    X(device_tx_packets, "port_tx_packets_total", "", "packets", "",                      \
      "Packets the device sent (ethdev opackets).", opackets)                             \
    X(device_rx_bytes, "port_rx_bytes_total", "", "bytes", "",                            \
      "Bytes the device received (ethdev ibytes).", ibytes)                               \
    X(device_tx_bytes, "port_tx_bytes_total", "", "bytes", "",                            \
      "Bytes the device sent (ethdev obytes).", obytes)                                   \
    X(device_rx_errors, "port_rx_errors_total", "", "packets", "RX_ERRORS",               \
      "Erroneous received packets (ethdev ierrors).", ierrors)                            \
    X(device_tx_errors, "port_tx_errors_total", "", "packets", "TX_ERRORS",               \
      "Failed transmissions (ethdev oerrors).", oerrors)                                  \
    X(device_rx_missed, "port_rx_missed_total", "", "packets", "RX_MISSED",               \
      "Packets the device dropped because the RX queues were full (ethdev imissed): the " \
      "workers do not keep up.",                                                          \
      imissed)                                                                            \
    X(device_rx_nombuf, "port_rx_nombuf_total", "", "packets", "",                        \
      "Receive buffer allocation failures (ethdev rx_nombuf): the mbuf pool ran dry.", rx_nombuf)

DSCPGW_FAMILY(DeviceCounter, DSCPGW_DEVICE_COUNTERS)

}  // namespace dscpgw
